// Package benchtool is what the benchmark commands share: how each one
// runs, and the secret a measure makes up for a cluster it starts.
package benchtool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Main runs app on the command line and exits 1 on an error, which it
// prints after the app's name. A Ctrl-C or SIGTERM ends the measure through
// its context, so that it stops what it started before it exits.
func Main(app *cli.App) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := app.RunContext(ctx, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, app.Name+":", err)
		os.Exit(1)
	}
}

// Secret is a random cluster secret (128 bits, hex), for a cluster a
// measure starts when it was given none.
func Secret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}
