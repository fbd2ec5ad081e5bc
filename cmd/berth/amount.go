package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/units"
	"github.com/berth-cluster/berth/wire"
)

// noAmount is the value of --guarantee or --limit that sets nothing: it
// clears what the queue had.
const noAmount = "none"

// amountFlag parses a queue's --guarantee or --limit:
// cores=N,memory=SIZE,NAME=AMOUNT,... where any other NAME is a custom
// resource (gpu=2, gpu=0.5), or "none". Not given: nil, which leaves the
// queue's setting to the master (its default, or what it was).
func amountFlag(c *cli.Context, flag string) (*wire.Amount, error) {
	if !c.IsSet(flag) {
		return nil, nil
	}
	value := strings.TrimSpace(c.String(flag))
	a := &wire.Amount{}
	if value == noAmount {
		return a, nil
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(value, ",") {
		key, err := addAmount(a, strings.TrimSpace(part))
		if err == nil && seen[key] {
			err = fmt.Errorf("%s given twice", key)
		}
		if err != nil {
			return nil, fmt.Errorf("invalid value %q for flag --%s: %w", value, flag, err)
		}
		seen[key] = true
	}
	if err := a.Check("--" + flag); err != nil {
		return nil, fmt.Errorf("invalid value %q for flag %w", value, err)
	}
	return a, nil
}

// addAmount sets one KEY=VALUE of an amount in a and returns its key.
func addAmount(a *wire.Amount, part string) (string, error) {
	key, value, ok := strings.Cut(part, "=")
	if !ok || key == "" || value == "" {
		return "", fmt.Errorf("%q: want KEY=VALUE, e.g. cores=8,memory=16g,gpu=2 (or %s)", part, noAmount)
	}
	switch key {
	case "cores":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return "", fmt.Errorf("cores=%s: want a whole number of cores, 0 or more", value)
		}
		a.Cores = n
	case "memory":
		if value == "0" { // bounds nothing, as cores=0 does in a limit
			a.MemoryMB = 0
			break
		}
		mb, err := units.ParseMemoryMB(value)
		if err != nil {
			return "", fmt.Errorf("memory: %w", err)
		}
		a.MemoryMB = mb
	default:
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return "", fmt.Errorf("%s=%s: the amount is not a number", key, value)
		}
		if a.Resources == nil {
			a.Resources = wire.ResourceAmounts{}
		}
		a.Resources[key] = v
	}
	return key, nil
}

// formatAmount renders an amount in the form --guarantee and --limit take,
// "cores=8,memory=16g,gpu=2", or "-" for nothing.
func formatAmount(a wire.Amount) string {
	var parts []string
	if a.Cores > 0 {
		parts = append(parts, "cores="+strconv.Itoa(a.Cores))
	}
	if a.MemoryMB > 0 {
		parts = append(parts, "memory="+mem(a.MemoryMB))
	}
	if len(a.Resources) > 0 {
		parts = append(parts, a.Resources.String())
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}
