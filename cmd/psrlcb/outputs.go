package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/psrlcb/psrlcb/explore"
	"github.com/psrlcb/psrlcb/internal/outdir"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// outputKind describes the output directory of one command, so that
// --force replaces only an earlier output of that command.
type outputKind struct {
	command string
	marker  string
	known   []string
}

// File names of the explore and simulate-online outputs.
const (
	terminationFileName = explore.TerminationFileName
	roundsFileName      = "rounds.arrow"
	onlineLogsFileName  = "logs.parquet"
)

var (
	fitOutput     = outputKind{"psrlcb fit", report.ManifestFile, report.OutputFiles()}
	exploreOutput = outputKind{"psrlcb explore", terminationFileName, []string{
		terminationFileName, "policy-h*.arrow", policy.FileName, "model.arrow"}}
	simulateOnlineOutput = outputKind{"psrlcb simulate-online", roundsFileName, []string{
		roundsFileName, onlineLogsFileName, "model.arrow", policy.FileName}}
)

// createOut stages the output directory out of a command (see package
// outdir for the rules), printing what it repaired beside it.
func createOut(stderr io.Writer, out string, force bool, kind outputKind, inputs []string) (*outdir.Dir, error) {
	dir, err := outdir.Create(out, outdir.Options{Force: force, Command: kind.command, Marker: kind.marker, Known: kind.known, Inputs: inputs})
	if err != nil {
		return nil, err
	}
	for _, n := range dir.Notes {
		notef(stderr, "%s", n)
	}
	return dir, nil
}

// commitDir writes the outputs into dir (write) and, unless ctx was
// cancelled meanwhile, commits them.
func commitDir(ctx context.Context, dir *outdir.Dir, write func() error) error {
	if err := write(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return dir.Commit()
}

// writeAndCommit writes the outputs into the staging directory tmp and,
// unless ctx was cancelled meanwhile (an interrupt while writing still
// leaves nothing behind), commits them as out.
func writeAndCommit(ctx context.Context, out, tmp string, commit func() error, write func(tmp string) error) error {
	if err := write(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return fmt.Errorf("moving the results into %s: %w", out, err)
	}
	return nil
}

// writeJSON writes v to w as indented JSON, one value and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func warnf(w io.Writer, format string, args ...any) {
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "psrlcb: warning: "+format+"\n", args...)
}

func notef(w io.Writer, format string, args ...any) {
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "psrlcb: note: "+format+"\n", args...)
}
