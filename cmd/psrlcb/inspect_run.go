package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/psrlcb/psrlcb/report"
)

// isRunDir reports whether path is an output directory of `psrlcb fit`.
func isRunDir(path string) bool {
	fi, err := os.Stat(filepath.Join(path, report.ManifestFile))
	return err == nil && !fi.IsDir()
}

// inspectRunDir prints the headline figures of a fit output directory.
func inspectRunDir(w io.Writer, dir string, asJSON bool) error {
	m, err := report.ReadManifest(dir)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
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
	printHeadline(w, dir, m, &plan)
	return nil
}
