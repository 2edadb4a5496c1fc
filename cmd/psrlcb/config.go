package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

// configurable makes every flag of a command settable three more ways, for
// scheduled jobs: an environment variable PSRLCB_<FLAG> (upper case, '-'
// as '_') and a YAML or TOML file named by --config (keys are the flag
// names). Precedence: flag, environment, config file, default.
func configurable(flags []cli.Flag) ([]cli.Flag, cli.BeforeFunc) {
	out := make([]cli.Flag, 0, len(flags)+1)
	for _, f := range flags {
		out = append(out, withEnvAndFile(f))
	}
	out = append(out, &cli.PathFlag{
		Name:    "config",
		Usage:   "YAML (.yaml/.yml) or TOML (.toml) file of flag values, keys named as the flags",
		EnvVars: []string{"PSRLCB_CONFIG"},
	})
	before := func(c *cli.Context) error {
		path := c.Path("config")
		if path == "" {
			return nil
		}
		var src altsrc.InputSourceContext
		var err error
		switch strings.ToLower(filepath.Ext(path)) {
		case ".toml":
			src, err = altsrc.NewTomlSourceFromFile(path)
		case ".yaml", ".yml":
			src, err = altsrc.NewYamlSourceFromFile(path)
		default:
			return usagef("--config %s: use a .yaml, .yml or .toml file", path)
		}
		if err != nil {
			return usagef("--config %s: %v", path, err)
		}
		if err := altsrc.ApplyInputSourceValues(c, src, out); err != nil {
			return usagef("--config %s: %v", path, err)
		}
		return nil
	}
	return out, before
}

func envName(flag string) string {
	return "PSRLCB_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func withEnvAndFile(f cli.Flag) cli.Flag {
	switch fl := f.(type) {
	case *cli.StringFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewStringFlag(fl)
	case *cli.PathFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewPathFlag(fl)
	case *cli.IntFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewIntFlag(fl)
	case *cli.Int64Flag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewInt64Flag(fl)
	case *cli.Uint64Flag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewUint64Flag(fl)
	case *cli.Float64Flag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewFloat64Flag(fl)
	case *cli.BoolFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewBoolFlag(fl)
	case *cli.StringSliceFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewStringSliceFlag(fl)
	case *cli.DurationFlag:
		fl.EnvVars = append(fl.EnvVars, envName(fl.Name))
		return altsrc.NewDurationFlag(fl)
	}
	panic(fmt.Sprintf("configurable: flag type %T not handled", f))
}
