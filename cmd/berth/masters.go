package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// masterCommand is `berth master join|leave`: the Raft membership of the
// masters, through the leader (a follower redirects there).
func masterCommand() *cli.Command {
	return &cli.Command{
		Name:  "master",
		Usage: "add a master to the cluster's Raft configuration, or remove one",
		Subcommands: []*cli.Command{
			{
				Name:      "join",
				Usage:     "add a master, started with --raft-addr and no --peers, to the cluster as a voter",
				ArgsUsage: "ID --raft-addr HOST:PORT --api-addr URL",
				Description: `POST /v1/raft/join on the leader: the master ID, listening for Raft at
--raft-addr and serving its API at --api-addr, becomes a voter and catches up
from the log or a snapshot. Start it first, with an empty --data-dir, its
--node-id, --raft-addr and TLS flags and no --peers (or give it --join with
the masters' URLs, and it asks for this itself). Joining a master that is a
member at the same address changes nothing.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "raft-addr", EnvVars: env("master-join", "raft-addr"), Usage: "the new master's Raft `HOST:PORT` (its --raft-addr)"},
					&cli.StringFlag{Name: "api-addr", EnvVars: env("master-join", "api-addr"), Usage: "the new master's API `URL` (https://host:7077, its --advertise)"},
				},
				Action: func(c *cli.Context) error {
					args, err := positional(c, "berth master join ID --raft-addr HOST:PORT --api-addr URL", 1)
					if err != nil {
						return err
					}
					req := wire.JoinRequest{ID: args[0], RaftAddr: c.String("raft-addr"), APIAddr: c.String("api-addr")}
					if req.RaftAddr == "" {
						return fmt.Errorf("--raft-addr is required: the new master's Raft address, host:port (usage: berth master join ID --raft-addr HOST:PORT --api-addr URL)")
					}
					if req.APIAddr == "" {
						return fmt.Errorf("--api-addr is required: the new master's API URL, https://host:7077 (usage: berth master join ID --raft-addr HOST:PORT --api-addr URL)")
					}
					if req.APIAddr, err = wire.ParseMasterURL("--api-addr", req.APIAddr); err != nil {
						return err
					}
					cl, err := newClient(c)
					if err != nil {
						return err
					}
					ctx, cancel := callCtx(c)
					defer cancel()
					nodes, err := cl.JoinMaster(ctx, req)
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "master %s joined\n", termtext.Escape(req.ID))
					return printMemberList(c.App.Writer, nodes)
				},
			},
			{
				Name:      "leave",
				Usage:     "remove a master from the cluster's Raft configuration (then stop it)",
				ArgsUsage: "ID",
				Description: `POST /v1/raft/leave on the leader. The master stops being a voter and gets
no more of the log; stop its process afterwards. Removing the leader makes it
step down once the change is committed. Keep an odd number of voters.
An id not in the configuration is refused (404). (berth operator raft
remove-peer does the same and also refuses the leader.)`,
				Action: func(c *cli.Context) error {
					args, err := positional(c, "berth master leave ID", 1)
					if err != nil {
						return err
					}
					cl, err := newClient(c)
					if err != nil {
						return err
					}
					ctx, cancel := callCtx(c)
					defer cancel()
					nodes, err := cl.LeaveMaster(ctx, args[0])
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "master %s left the Raft configuration: stop its process now\n", termtext.Escape(args[0]))
					return printMemberList(c.App.Writer, nodes)
				},
			},
		},
	}
}

// printMemberList prints the masters a membership change answered.
func printMemberList(w io.Writer, nodes []wire.MasterNode) error {
	var parts []string
	for _, n := range sortedMasters(nodes) {
		s := termtext.Escape(n.ID)
		switch {
		case n.Leader:
			s += " (leader)"
		case !n.Voter:
			s += " (non-voter)"
		}
		parts = append(parts, s)
	}
	_, err := fmt.Fprintf(w, "masters now: %s\n", strings.Join(parts, ", "))
	return err
}

// uiCommand is `berth ui`: a one-time link that signs a browser in to the
// web UI.
func uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "print a one-time link that signs a browser in to the web UI",
		Description: `Asks a master (with this command's credentials: a cli certificate or the
secret) for a link to its web UI that signs the browser that opens it in,
once, within 5 minutes: no certificate to load into the browser, no secret to
type (as nomad ui -authenticate). The browser keeps a session cookie for 12
hours. The link works on the master that made it; with TLS and no operator
secret, so does the session (each master keys its own). Without any
credential (the loopback mode) the UI needs no sign-in, and berth ui prints
its address.`,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected arguments %q (usage: berth ui)", c.Args().Slice())
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			ctx, cancel := callCtx(c)
			defer cancel()
			link, err := cl.SignInLink(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, termtext.Escape(link.URL))
			if link.Expires != nil {
				fmt.Fprintf(c.App.ErrWriter, "open it within %s (until %s): it signs one browser in, once\n",
					time.Until(*link.Expires).Round(time.Second), link.Expires.Local().Format("15:04:05"))
			}
			return nil
		},
	}
}
