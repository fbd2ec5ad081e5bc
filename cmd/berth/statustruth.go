package main

// What berth status says of the masters: which answer, which do not and
// since when, whether there is a leader and a quorum, and how old the
// state shown is when no leader answers.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// printMasters writes the answering master's line, what its view can and
// cannot tell, the leader and quorum, and the masters sorted by id.
func printMasters(w io.Writer, st wire.ClusterStatus, now time.Time) {
	leader := st.Leader
	if leader == "" {
		leader = "none"
	}
	fmt.Fprintf(w, "Master %s\tstatus %s\tview %s\tleader %s\tepoch %d\tversion %s\n",
		termtext.Escape(st.MasterID), termtext.Escape(st.Status), termtext.Escape(st.View), termtext.Escape(leader), st.Epoch, termtext.Escape(orDash(st.Version)))
	if line := quorumLine(st, now); line != "" {
		fmt.Fprintln(w, line)
	}
	if st.View == wire.ViewFollower {
		fmt.Fprintln(w, "(a follower's replica: no executors, no heartbeats; whether an active app runs is the leader's to know: its state is UNKNOWN, its cores those its placements on record hold)")
	}
	for _, m := range sortedMasters(st.Masters) {
		fmt.Fprintf(w, "  %s\t%s\traft %s\t%s\tversion %s\n", termtext.Escape(m.ID), termtext.Escape(orDash(m.APIAddr)), termtext.Escape(m.RaftAddr),
			masterRole(m, st.MasterID, now), termtext.Escape(orDash(m.Version)))
	}
}

// masterRole is a master's role as its line says it: leader or follower
// when it answers, unreachable (since when, and why) when it does not.
func masterRole(m wire.MasterNode, answering string, now time.Time) string {
	if m.Reachable != nil && !*m.Reachable {
		role := "UNREACHABLE"
		if m.UnreachableSince != nil {
			role += fmt.Sprintf(" since %s (%s)", clock(*m.UnreachableSince, now), ago(*m.UnreachableSince, now))
		}
		if m.Unreachable != "" {
			role += ": " + termtext.Escape(shortProbeError(m.Unreachable))
		}
		return role
	}
	role := "follower"
	if m.Leader {
		role = "leader"
	}
	if !m.Voter {
		role += ", non-voter"
	}
	if m.ID == answering {
		role += " (answered)"
	}
	return role
}

// quorumLine says what the masters' state means for the cluster: no
// leader (no quorum, or an election), or masters unreachable; "" when all
// is well (or nothing is known: one master alone).
func quorumLine(st wire.ClusterStatus, now time.Time) string {
	voters, down, unasked := 0, 0, 0
	for _, m := range st.Masters {
		if !m.Voter {
			continue
		}
		voters++
		switch {
		case m.Reachable == nil:
			unasked++
		case !*m.Reachable:
			down++
		}
	}
	quorum := voters/2 + 1
	noLeader := st.Leader == "" && st.LeaderID == ""
	switch {
	case voters == 0 && !noLeader:
		return ""
	case voters == 0:
		return "no leader: writes are refused until one is elected; " + asOf(st, now)
	case noLeader && voters-down < quorum:
		return fmt.Sprintf("no leader: %d of %d masters unreachable, no quorum; writes are refused; %s", down, voters, asOf(st, now))
	case noLeader && voters-down-unasked < quorum:
		// A master not asked (its API address not yet in this replica, or
		// no ask made yet) may be up or down: say so, not "a quorum".
		return fmt.Sprintf("no leader: %d of %d masters reachable, %d unreachable, %d not asked by master %s (no API address of it on record yet): whether a quorum is up is not known here; writes wait for a leader; %s",
			voters-down-unasked, voters, down, unasked, termtext.Escape(st.MasterID), asOf(st, now))
	case noLeader:
		return fmt.Sprintf("no leader: an election is under way (%d of %d masters reachable, a quorum); writes wait for it; %s", voters-down, voters, asOf(st, now))
	case voters-down < quorum:
		return fmt.Sprintf("%d of %d masters unreachable, no quorum: writes are refused", down, voters)
	case down > 0:
		return fmt.Sprintf("%d of %d masters unreachable; the other %d keep a quorum", down, voters, voters-down)
	}
	return ""
}

// asOf says how old a state without a leader is.
func asOf(st wire.ClusterStatus, now time.Time) string {
	if st.LeaderContact == nil {
		return fmt.Sprintf("last known state: master %s's replica (it has not heard from a leader since it started)", termtext.Escape(st.MasterID))
	}
	return fmt.Sprintf("last known state as of %s (%s, when master %s last heard from a leader)",
		clock(*st.LeaderContact, now), ago(*st.LeaderContact, now), termtext.Escape(st.MasterID))
}

// sortedMasters is masters sorted by id (a copy).
func sortedMasters(masters []wire.MasterNode) []wire.MasterNode {
	out := slices.Clone(masters)
	slices.SortFunc(out, func(a, b wire.MasterNode) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// shortProbeError keeps the end of a probe's error, what happened to the
// connection ("connect: connection refused"), without the request's URL
// before it.
func shortProbeError(s string) string {
	if i := strings.LastIndex(s, ": dial tcp "); i >= 0 {
		if j := strings.Index(s[i+len(": dial tcp "):], ": "); j >= 0 {
			return s[i+len(": dial tcp ")+j+2:]
		}
	}
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
