package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/ingest"
)

func init() {
	flags, before := configurable(append(ingestFlags(),
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of text"},
		&cli.BoolFlag{Name: "policy", Usage: "with a fit output directory: print the policy's decision tree (most probable nodes first)"},
		&cli.IntFlag{Name: "top", Value: 40, Usage: "with --policy: how many of the most probable decision nodes to print (0: all)"},
	))
	commands = append(commands, &cli.Command{
		Name:      "inspect",
		Usage:     "validate trajectory logs and summarise them (episodes, vocabularies, rewards, propensities, ι, histories)",
		ArgsUsage: "FILES...",
		Description: "Reads the Parquet logs as fit would, checks them and prints what the data can support.\n" +
			"Only logged steps count; the padding of episodes that ended early is excluded except in the history counts.",
		Flags:  flags,
		Before: before,
		Action: runInspect,
	})
}

// inspectReport is the JSON form of inspect's output.
type inspectReport struct {
	Files     []string `json:"files"`
	FileBytes int64    `json:"file_bytes"`
	ingest.Summary
}

func runInspect(c *cli.Context) error {
	if c.NArg() == 1 && isRunDir(c.Args().First()) {
		return inspectRunDir(c, c.Args().First())
	}
	files, err := logFiles(c)
	if err != nil {
		return err
	}
	opts, err := ingestOptions(c)
	if err != nil {
		return err
	}
	d, err := ingest.Read(c.Context, files, opts)
	if err != nil {
		return err
	}
	rep := inspectReport{Files: files, Summary: ingest.Summarize(d)}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			rep.FileBytes += st.Size()
		}
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeInspectText(w, &rep)
}

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
	for h, rr := range s.StepReward {
		fmt.Fprintf(w, "reward h=%d\tmin %g  max %g  mean %.6g  (%d steps)\n", h+1, rr.Min, rr.Max, rr.Mean, rr.N)
	}
	if p := s.Propensity; p != nil {
		fmt.Fprintf(w, "propensity\tmin %g  p01 %g  p05 %g  p25 %g  median %g  max %g\n", p.Min, p.P01, p.P05, p.P25, p.Median, p.Max)
		fmt.Fprintf(w, "iota\t%g (least logged propensity; one-step tests)\n", s.Iota)
	} else {
		fmt.Fprintf(w, "propensity\tabsent\n")
		fmt.Fprintf(w, "iota\t%g ESTIMATED (least frequency of a logged action given step and observation; one-step tests)\n", s.Iota)
	}
	hist := make([]string, len(s.Histories))
	for h, n := range s.Histories {
		hist[h] = fmt.Sprintf("h=%d: %d", h+1, n)
	}
	fmt.Fprintf(w, "distinct histories\t%s\n", strings.Join(hist, ", "))
	fmt.Fprintf(w, "quarantined\t%d episodes\n", s.Quarantined)
	for _, q := range s.FirstQuarantined {
		fmt.Fprintf(w, "\t%s: episode %q step %d: %s\n", q.File, q.EpisodeID, q.Step, q.Reason)
	}
	if s.Quarantined > len(s.FirstQuarantined) {
		fmt.Fprintf(w, "\t... and %d more\n", s.Quarantined-len(s.FirstQuarantined))
	}
	return w.Flush()
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
