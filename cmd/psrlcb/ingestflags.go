package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/fitflag"
	"github.com/psrlcb/psrlcb/schemas"
)

// Column flags, one per log column (see package schemas).
var columnFlags = [schemas.NumRoles]string{
	schemas.Episode:     "col-episode",
	schemas.Step:        "col-step",
	schemas.Observation: "col-observation",
	schemas.Action:      "col-action",
	schemas.Reward:      "col-reward",
	schemas.Propensity:  "col-propensity",
	schemas.Terminal:    "col-terminal",
}

// ingestFlags returns fresh flags choosing how the logs are read: the
// horizon, the invalid-episode policy and the column names. Every command
// that reads logs appends them to its own flags.
func ingestFlags() []cli.Flag {
	flags := []cli.Flag{cliInt(fitflag.Horizon), cliString(fitflag.OnInvalid)}
	for r := schemas.Role(0); r < schemas.NumRoles; r++ {
		c := schemas.Columns[r]
		usage := "name of the " + c.Name + " column"
		if len(c.Aliases) > 0 {
			usage += " (default: " + c.Name
			for _, a := range c.Aliases {
				usage += ", " + a
			}
			usage += ")"
		} else {
			usage += " (default: " + c.Name + ")"
		}
		flags = append(flags, &cli.StringFlag{Name: columnFlags[r], Usage: usage})
	}
	return flags
}

// columnMapping builds the column mapping from the column flags.
func columnMapping(c *cli.Context) schemas.Mapping {
	return schemas.Mapping{
		Episode:     c.String(columnFlags[schemas.Episode]),
		Step:        c.String(columnFlags[schemas.Step]),
		Observation: c.String(columnFlags[schemas.Observation]),
		Action:      c.String(columnFlags[schemas.Action]),
		Reward:      c.String(columnFlags[schemas.Reward]),
		Propensity:  c.String(columnFlags[schemas.Propensity]),
		Terminal:    c.String(columnFlags[schemas.Terminal]),
	}
}

// ingestOptions builds ingest.Options from the flags of ingestFlags.
func ingestOptions(c *cli.Context) (ingest.Options, error) {
	o := ingest.Options{
		Horizon:   c.Int("horizon"),
		OnInvalid: c.String("on-invalid"),
		Columns:   columnMapping(c),
	}
	if o.OnInvalid != ingest.OnInvalidFail && o.OnInvalid != ingest.OnInvalidSkip {
		return o, usagef("--on-invalid must be %q or %q, not %q", ingest.OnInvalidFail, ingest.OnInvalidSkip, o.OnInvalid)
	}
	if o.Horizon < 0 || o.Horizon > ingest.MaxHorizon {
		return o, usagef("--horizon must be in [1,%d] (or 0 for the largest step), not %d", ingest.MaxHorizon, o.Horizon)
	}
	if err := o.Columns.Validate(); err != nil {
		return o, usagef("column flags: %v", err)
	}
	return o, nil
}

// logFiles expands the command's arguments (files, globs, directories).
func logFiles(c *cli.Context) ([]string, error) {
	if c.NArg() == 0 {
		return nil, usagef("%s: give the Parquet log files (globs and directories allowed)", c.Command.Name)
	}
	return ingest.Expand(c.Args().Slice())
}

// inputPaths are the paths the run reads, for keeping --out clear of them:
// the arguments that name files or directories (globs are covered by
// their expansion) and the expanded files.
func inputPaths(args, files []string) []string {
	var out []string
	for _, a := range args {
		if !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
		}
	}
	return append(out, files...)
}
