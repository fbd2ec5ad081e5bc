package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/config"
	"github.com/berth-cluster/berth/internal/version"
)

// errVersionShown ends a run that printed --version: exit 0.
var errVersionShown = errors.New("version shown")

const configKey = "config-sources"

// configFlags are --config (BERTH_CONFIG), whose file gives berth's own
// flags their values, and --version.
func configFlags() []cli.Flag {
	return []cli.Flag{config.Flag("BERTH_CONFIG"), version.Flag()}
}

// loadConfig answers --version, or gives the global flags the values of
// the --config file that neither the command line nor the environment
// set (berth.toml: master addresses, TLS files, secret file, timeout).
// It runs in the app's Before, before any command reads a global flag.
func loadConfig(c *cli.Context) error {
	if shown, err := version.Printed(c); shown {
		if err != nil {
			return err
		}
		return errVersionShown
	}
	src, err := config.Load(c, nil)
	if err != nil {
		return err
	}
	c.App.Metadata[configKey] = src
	return nil
}

// annotateConfig names the file, line and key of a value from the
// --config file that berth refused (the error names its flag).
func annotateConfig(app *cli.App, err error) error {
	if src, ok := app.Metadata[configKey].(*config.Sources); ok {
		return src.Annotate(err)
	}
	return err
}
