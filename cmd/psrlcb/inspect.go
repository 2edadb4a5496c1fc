package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/outdir"
)

func newInspectCommand() *cli.Command {
	flags, before := configurable(append(ingestFlags(),
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of text"},
		&cli.BoolFlag{Name: "policy", Usage: "with a fit output directory: print the policy's decision tree (most probable nodes first)"},
		&cli.IntFlag{Name: "top", Value: 40, Usage: "with --policy: how many of the most probable decision nodes to print (0: all)"},
	))
	return &cli.Command{
		Name:      "inspect",
		Usage:     "validate trajectory logs and summarise them (episodes, vocabularies, rewards, propensities, ι, histories)",
		ArgsUsage: "FILES...",
		Description: "Reads the Parquet logs as fit would, checks them and prints what the data can support.\n" +
			"Only logged steps count; the padding of episodes that ended early is excluded except in the history counts.\n" +
			"Given one output directory of `psrlcb fit`, prints its headline figures instead; leftovers of a killed\n" +
			"--force run beside it are repaired first (the previous output is restored) and reported.",
		Flags:  flags,
		Before: before,
		Action: inspectAction,
	}
}

// inspectAction inspects one fit output directory, repaired first, or
// the logs its arguments name.
func inspectAction(c *cli.Context) error {
	o := inspectOptions{args: c.Args().Slice(), json: c.Bool("json"), stderr: c.App.ErrWriter, policy: c.Bool("policy"), top: c.Int("top")}
	runDir, err := runDirArg(o)
	if err != nil {
		return err
	}
	if runDir {
		o.runDir = o.args[0]
		return runInspect(c.Context, c.App.Writer, o)
	}
	if o.files, err = logFiles(c); err != nil {
		return err
	}
	if o.ingest, err = ingestOptions(c); err != nil {
		return err
	}
	return runInspect(c.Context, c.App.Writer, o)
}

// runDirArg reports whether o's only argument is a run directory (a
// glob pattern never is), repairing an interrupted --force as it checks.
func runDirArg(o inspectOptions) (bool, error) {
	if len(o.args) != 1 || strings.ContainsAny(o.args[0], "*?[") {
		return false, nil
	}
	return recoverRunDir(o.args[0], o.stderr)
}

// recoverRunDir says whether path is a fit output directory. A fit output
// killed in the middle of a --force replace is found and repaired before
// it is looked for, with notes to stderr.
func recoverRunDir(path string, stderr io.Writer) (bool, error) {
	notes, err := outdir.Recover(path)
	for _, n := range notes {
		notef(stderr, "%s", n)
	}
	if err != nil {
		return false, err
	}
	return isRunDir(path), nil
}

// inspectOptions are the options of `psrlcb inspect`: logs to summarise,
// or one fit output directory.
type inspectOptions struct {
	args   []string
	files  []string
	runDir string
	ingest ingest.Options
	json   bool
	stderr io.Writer
	// policy prints the run's decision tree instead of its headline, the
	// top most probable nodes (0: all).
	policy bool
	top    int
}

// inspectReport is the JSON form of inspect's output.
type inspectReport struct {
	Files     []string `json:"files"`
	FileBytes int64    `json:"file_bytes"`
	ingest.Summary
}

// runInspect summarises the logs of o as text or JSON, or shows the fit
// output directory o.runDir.
func runInspect(ctx context.Context, w io.Writer, o inspectOptions) error {
	if o.runDir != "" {
		return inspectRunDir(w, o.runDir, o)
	}
	files := o.files
	sum, err := ingest.ReadSummary(ctx, files, o.ingest)
	if err != nil {
		return err
	}
	rep := inspectReport{Files: files, Summary: sum, FileBytes: fileBytes(files)}
	if o.json {
		return writeJSON(w, rep)
	}
	return writeInspectText(w, &rep)
}

// fileBytes is the total size of files, those that cannot be stat'ed
// left out.
func fileBytes(files []string) int64 {
	var n int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// writeInspectText writes the summary r as the table a person reads.
func writeInspectText(out io.Writer, r *inspectReport) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	s := &r.Summary
	fmt.Fprintf(w, "files\t%d (%s)\n", len(r.Files), humanBytes(r.FileBytes))
	fmt.Fprintf(w, "episodes\t%d (%d ended early and are padded with %s)\n", s.Episodes, s.Padded, ingest.EndSymbol)
	fmt.Fprintf(w, "horizon\t%d\n", s.Horizon)
	fmt.Fprintf(w, "rows\t%d read, %d logged steps kept\n", s.Rows, s.LoggedRows)
	fmt.Fprintf(w, "observations\t|O| = %d; most frequent: %s\n", s.NumObs, symbolList(s.TopObs))
	fmt.Fprintf(w, "actions\t|A| = %d; most frequent: %s\n", s.NumActions, symbolList(s.TopActions))
	fmt.Fprintf(w, "return\tmin %g  max %g  mean %.6g\n", s.Return.Min, s.Return.Max, s.Return.Mean)
	writeRewardText(w, s)
	writePropensityText(w, s)
	fmt.Fprintf(w, "distinct histories\t%s\n", historyCounts(s))
	writeQuarantinedText(w, s)
	return w.Flush()
}

// writeRewardText writes one row per step: the range, mean and number of
// its rewards.
func writeRewardText(w io.Writer, s *ingest.Summary) {
	for h, rr := range s.StepReward {
		fmt.Fprintf(w, "reward h=%d\tmin %g  max %g  mean %.6g  (%d steps)\n", h+1, rr.Min, rr.Max, rr.Mean, rr.N)
	}
}

// historyCounts lists the number of distinct histories of each length,
// "h=1: n1, h=2: n2, ...".
func historyCounts(s *ingest.Summary) string {
	hist := make([]string, len(s.Histories))
	for h, n := range s.Histories {
		hist[h] = fmt.Sprintf("h=%d: %d", h+1, n)
	}
	return strings.Join(hist, ", ")
}

// writePropensityText writes the rows of the logged propensities'
// quantiles and ι, or of ι estimated from action frequencies without them.
func writePropensityText(w io.Writer, s *ingest.Summary) {
	if p := s.Propensity; p != nil {
		fmt.Fprintf(w, "propensity\tmin %g  p01 %g  p05 %g  p25 %g  median %g  max %g\n", p.Min, p.P01, p.P05, p.P25, p.Median, p.Max)
		fmt.Fprintf(w, "iota\t%g (least logged propensity; one-step tests)\n", s.Iota)
	} else {
		fmt.Fprintf(w, "propensity\tabsent\n")
		fmt.Fprintf(w, "iota\t%g ESTIMATED (least frequency of a logged action given step and observation; one-step tests)\n", s.Iota)
	}
}

// writeQuarantinedText writes the number of quarantined episodes and the
// first of them.
func writeQuarantinedText(w io.Writer, s *ingest.Summary) {
	fmt.Fprintf(w, "quarantined\t%d (episodes, and per file the rows without an episode id)\n", s.Quarantined)
	for _, q := range s.FirstQuarantined {
		fmt.Fprintf(w, "\t%s\n", q)
	}
	if s.Quarantined > len(s.FirstQuarantined) {
		fmt.Fprintf(w, "\t... and %d more\n", s.Quarantined-len(s.FirstQuarantined))
	}
}

func symbolList(top []ingest.SymbolCount) string {
	parts := make([]string, len(top))
	for i, sc := range top {
		parts[i] = fmt.Sprintf("%q %d", sc.Symbol, sc.Count)
	}
	return strings.Join(parts, ", ")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
