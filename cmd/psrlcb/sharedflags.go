package main

import (
	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/internal/fitflag"
)

// The options fit shares with psrlcb-beam (internal/fitflag) as
// urfave/cli flags: one definition of each name, default and help text
// for both commands.

// cliString is the shared string option f.
func cliString(f fitflag.Flag[string]) *cli.StringFlag {
	return &cli.StringFlag{Name: f.Name, Value: f.Value, Usage: f.Usage}
}

// cliInt is the shared int option f.
func cliInt(f fitflag.Flag[int]) *cli.IntFlag {
	return &cli.IntFlag{Name: f.Name, Value: f.Value, Usage: f.Usage}
}

// cliInt64 is the shared int64 option f.
func cliInt64(f fitflag.Flag[int64]) *cli.Int64Flag {
	return &cli.Int64Flag{Name: f.Name, Value: f.Value, Usage: f.Usage}
}

// cliUint64 is the shared uint64 option f.
func cliUint64(f fitflag.Flag[uint64]) *cli.Uint64Flag {
	return &cli.Uint64Flag{Name: f.Name, Value: f.Value, Usage: f.Usage}
}

// cliBool is the shared bool option f.
func cliBool(f fitflag.Flag[bool]) *cli.BoolFlag {
	return &cli.BoolFlag{Name: f.Name, Value: f.Value, Usage: f.Usage}
}

// cliFloat is the shared float64 option f.
func cliFloat(f fitflag.Flag[float64]) *cli.Float64Flag {
	return &cli.Float64Flag{Name: f.Name, Value: f.Value, Usage: f.Usage}
}
