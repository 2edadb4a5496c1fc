package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/report"
)

// isRunDir reports whether path is an output directory of `psrlcb fit`.
func isRunDir(path string) bool {
	fi, err := os.Stat(filepath.Join(path, report.ManifestFile))
	return err == nil && !fi.IsDir()
}

// inspectRunDir prints the headline figures of a fit output directory.
func inspectRunDir(c *cli.Context, dir string) error {
	m, err := report.ReadManifest(dir)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			RunID       string          `json:"run_id"`
			Episodes    int             `json:"episodes"`
			Horizon     int             `json:"horizon"`
			Quarantined int             `json:"quarantined"`
			Headline    report.Headline `json:"headline"`
		}{m.RunID, m.Episodes, m.Horizon, len(m.Quarantined), m.Headline})
	}
	plan := m.Plan
	printHeadline(c.App.Writer, dir, m, &plan)
	return nil
}
