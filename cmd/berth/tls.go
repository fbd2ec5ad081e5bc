package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/security"
)

// tlsCommand makes the cluster's CA and its certificates (docs/SECURITY.md).
func tlsCommand() *cli.Command {
	// No flag is Required: urfave's message for one ("Required flag "dir"
	// not set") would not name it as typed; the actions name --dir etc.
	dir := &cli.StringFlag{Name: "dir", Usage: "required: the directory of the CA and the certificates"}
	return &cli.Command{
		Name:  "tls",
		Usage: "make the cluster's CA and its certificates",
		Subcommands: []*cli.Command{{
			Name:  "ca",
			Usage: "the cluster's certificate authority",
			Subcommands: []*cli.Command{{
				Name:      "create",
				Usage:     "write DIR/ca.pem and DIR/ca-key.pem (keep ca-key.pem offline)",
				UsageText: "berth tls ca create --dir DIR",
				Flags:     []cli.Flag{dir},
				Action: func(c *cli.Context) error {
					if err := checkDir(c); err != nil {
						return err
					}
					if err := security.CreateCA(c.String("dir")); err != nil {
						return err
					}
					return wrote(c, filepath.Join(c.String("dir"), "ca"))
				},
			}},
		}, {
			Name:  "cert",
			Usage: "certificates of the CA",
			Subcommands: []*cli.Command{{
				Name:      "create",
				Usage:     "write DIR/NAME.pem and DIR/NAME-key.pem, signed by the CA in DIR",
				UsageText: "berth tls cert create --dir DIR --role master|worker|cli --name NAME --host H1,H2,...",
				Flags: []cli.Flag{dir,
					&cli.StringFlag{Name: "role", Usage: "required: master, worker or cli (an operator)"},
					&cli.StringFlag{Name: "name", Usage: "required: the certificate's name, a master's --node-id or a worker's id"},
					&cli.StringFlag{Name: "host", Usage: "IP addresses and DNS names the process is reached at, comma-separated (required for master and worker)"},
				},
				Action: createCert,
			}},
		}},
	}
}

// createCert checks each flag itself, so that a refusal names the flag to
// fix; what CreateCert may still refuse (a file that exists, no CA in
// --dir) names the file or the command to run.
func createCert(c *cli.Context) error {
	if err := checkDir(c); err != nil {
		return err
	}
	role, err := security.ParseRole(c.String("role"))
	if err != nil {
		return fmt.Errorf("--role %w", err)
	}
	if err := security.CheckName(c.String("name")); err != nil {
		return fmt.Errorf("--name %w", err)
	}
	hosts := client.SplitMasters(c.String("host")) // comma-separated, trimmed
	if len(hosts) == 0 && role != security.RoleCLI {
		return fmt.Errorf("--host: a %s certificate needs the addresses it is reached at (IP addresses or DNS names)", role)
	}
	for _, h := range hosts {
		if err := security.CheckHost(h); err != nil {
			return fmt.Errorf("--host %w", err)
		}
	}
	if err := security.CreateCert(c.String("dir"), role, c.String("name"), hosts); err != nil {
		return err
	}
	return wrote(c, filepath.Join(c.String("dir"), c.String("name")))
}

// checkDir refuses arguments and an empty --dir, which would write the
// keys into the working directory.
func checkDir(c *cli.Context) error {
	if c.NArg() > 0 {
		return errors.New("unexpected arguments: this command takes flags only")
	}
	if c.String("dir") == "" {
		return errors.New("--dir: missing; want the directory of the CA")
	}
	return nil
}

// wrote says which files were written, their path escaped like every
// other text berth prints (a directory's name may hold anything).
func wrote(c *cli.Context, base string) error {
	base = termtext.Escape(base)
	_, err := fmt.Fprintf(c.App.Writer, "wrote %s.pem and %s-key.pem\n", base, base)
	return err
}
