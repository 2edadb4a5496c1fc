package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// isRunDir reports whether path is an output directory of `psrlcb fit`.
func isRunDir(path string) bool {
	fi, err := os.Stat(filepath.Join(path, report.ManifestFile))
	return err == nil && !fi.IsDir()
}

// inspectRunDir prints the headline figures of a fit output directory, or
// with --policy the policy's decision tree.
func inspectRunDir(w io.Writer, dir string, o inspectOptions) error {
	if o.policy {
		return inspectPolicy(w, dir, o.top, o.json)
	}
	m, err := report.ReadManifest(dir)
	if err != nil {
		return err
	}
	if o.json {
		return writeRunJSON(w, m)
	}
	plan := m.Plan
	printHeadline(w, dir, m, &plan)
	return nil
}

// writeRunJSON writes the run's size and headline as one JSON object.
func writeRunJSON(w io.Writer, m *report.Manifest) error {
	return writeJSON(w, struct {
		RunID       string          `json:"run_id"`
		Episodes    int             `json:"episodes"`
		Horizon     int             `json:"horizon"`
		Quarantined int             `json:"quarantined"`
		Headline    report.Headline `json:"headline"`
	}{m.RunID, m.Episodes, m.Horizon, len(m.Quarantined), m.Headline})
}

// policyNodeJSON is one node of `inspect --policy --json`.
type policyNodeJSON struct {
	Node    int64    `json:"node"`
	Parent  int64    `json:"parent"`
	Step    int      `json:"step"`
	History []string `json:"history"`
	Action  string   `json:"action"`
	Prob    *float64 `json:"probability,omitempty"` // of the action at the history; a stochastic policy only
	Reach   float64  `json:"reach"`
	Value   float64  `json:"value_units"`
	Bonus   float64  `json:"bonus_units"`
	LCB     float64  `json:"lcb_units"`
}

// inspectPolicy prints the --top most probable decision nodes of the run's
// policy as an indented tree, values in the logs' units of return.
func inspectPolicy(w io.Writer, dir string, top int, asJSON bool) error {
	if top < 0 {
		return usagef("--top must be 0 (all) or a positive number of nodes, not %d", top)
	}
	pol, meta, err := policy.ReadFile(filepath.Join(dir, report.PolicyFile))
	if err != nil {
		return err
	}
	va, ba := valuesAlpha(meta)
	rng, err := returnRange(dir)
	if err != nil {
		return err
	}
	view := report.NewPolicyView(pol, rng, nil, top)
	if asJSON {
		return writePolicyJSON(w, view, va, ba)
	}
	return writePolicyText(w, dir, view, va, ba)
}

// writePolicyJSON writes the nodes of v with the α of their values (va)
// and of the run's bound (ba) as one JSON object.
func writePolicyJSON(w io.Writer, v *report.PolicyView, va, ba float64) error {
	nodes := make([]policyNodeJSON, len(v.Rows))
	for i, r := range v.Rows {
		nodes[i] = policyNodeJSON{r.Node, r.Parent, r.Step, r.History, r.Action, nil, r.Reach, r.Value, r.Bonus, r.LCB}
		if v.Stochastic {
			nodes[i].Prob = &r.Prob
		}
	}
	return writeJSON(w, struct {
		TotalNodes  int              `json:"total_nodes"`
		ValuesAlpha report.Float     `json:"values_alpha"`
		BoundAlpha  report.Float     `json:"bound_alpha"`
		Nodes       []policyNodeJSON `json:"nodes"`
	}{v.TotalNodes, report.Float(va), report.Float(ba), nodes})
}

// valuesAlpha reads from policy.arrow's metadata the α of its value
// columns and the α of the run's reported bound (NaN when absent: a run
// of an earlier version).
func valuesAlpha(meta map[string]string) (values, bound float64) {
	get := func(k string) float64 {
		x, err := strconv.ParseFloat(meta[k], 64)
		if err != nil {
			return math.NaN()
		}
		return x
	}
	return get(report.MetaValuesAlpha), get(report.MetaBoundAlpha)
}

// alphaNote says, when they differ, that the nodes' LCBs are priced at
// the planning α and the run's reported bound at a larger one.
func alphaNote(values, bound float64) string {
	if math.IsNaN(values) || math.IsNaN(bound) || values == bound {
		return ""
	}
	return fmt.Sprintf("V_b and LCB per node are priced at the planning α = %.3g (the objective the policy maximises); the run's reported lower bound prices the bonus at α = %.3g (see the summary), so its LCB is lower than the root rows'", values, bound)
}

// writePolicyText writes the legend of the policy view v of the run dir
// and its rows as an indented tree.
func writePolicyText(out io.Writer, dir string, v *report.PolicyView, va, ba float64) error {
	writePolicyLegend(out, dir, v, va, ba)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "step\tobservation\taction\t%s%6s\t%9s\t%9s\t%9s\n", probCell(v.Stochastic, "prob"), "reach", "V_R", "V_b", "LCB")
	for _, r := range v.Rows {
		obs := strings.Repeat("  ", r.Step-1) + r.Obs
		if len(r.History) > 1 {
			obs = strings.Repeat("  ", r.Step-1) + r.History[len(r.History)-2] + " -> " + r.Obs
		}
		prob := probCell(v.Stochastic, strconv.FormatFloat(r.Prob, 'g', 3, 64))
		fmt.Fprintf(w, "%4d\t%s\t%s\t%s%6s\t%9.4g\t%9.3g\t%9.4g\n", r.Step, obs, r.Action, prob, share(r.Reach), r.Value, r.Bonus, r.LCB)
	}
	return w.Flush()
}

// probCell is the probability column's cell s, right-aligned, for a
// stochastic policy's table; "" (no column) for a deterministic one.
func probCell(stochastic bool, s string) string {
	if !stochastic {
		return ""
	}
	return fmt.Sprintf("%5s\t", s)
}

// writePolicyLegend says which nodes are shown, whether a controller
// decides past them, and what the columns mean.
func writePolicyLegend(out io.Writer, dir string, v *report.PolicyView, va, ba float64) {
	shown := fmt.Sprintf("all %d decision nodes", v.TotalNodes)
	if len(v.Rows) < v.TotalNodes {
		shown = fmt.Sprintf("the %d most probable of %d decision nodes (--top N for more; all are in %s)", len(v.Rows), v.TotalNodes, filepath.Join(dir, report.PolicyFile))
	}
	fmt.Fprintf(out, "policy: %s\n", shown)
	if _, err := os.Stat(filepath.Join(dir, report.ControllerFile)); err == nil {
		fmt.Fprintf(out, "past these rows the controller in %s decides every history (psrlcb act follows both)\n", filepath.Join(dir, report.ControllerFile))
	}
	fmt.Fprintf(out, "on seeing the observation after the history above it, take the action; reach is the share of episodes\n")
	fmt.Fprintf(out, "getting there under the fitted model; V_R is the expected return to go, V_b the expected bonus of the\n")
	fmt.Fprintf(out, "episode, LCB = V_R - V_b, all in the logs' units of return\n")
	if v.Stochastic {
		fmt.Fprintf(out, "the policy is stochastic: the rows with the same observation after the same history are the actions\n")
		fmt.Fprintf(out, "it may take there, prob the probability of each; the rows below a row continue its history with its action\n")
	}
	if n := alphaNote(va, ba); n != "" {
		fmt.Fprintf(out, "%s\n", n)
	}
	fmt.Fprintln(out)
}

// share formats a probability as a percentage.
func share(p float64) string {
	switch {
	case p == 0:
		return "0%"
	case p < 0.001:
		return "<0.1%"
	case p < 0.1:
		return strconv.FormatFloat(100*p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(100*p, 'f', 0, 64) + "%"
}

// returnRange reads the logged return range from model.arrow's metadata.
func returnRange(dir string) (report.ReturnRange, error) {
	path := filepath.Join(dir, report.ModelFile)
	t, err := arrowio.ReadArrow(path)
	if err != nil {
		return report.ReturnRange{}, err
	}
	lo, err1 := strconv.ParseFloat(t.Meta["psrlcb.return_min"], 64)
	hi, err2 := strconv.ParseFloat(t.Meta["psrlcb.return_max"], 64)
	if err1 != nil || err2 != nil {
		return report.ReturnRange{}, fmt.Errorf("%s: no return range in the metadata (psrlcb.return_min, psrlcb.return_max)", path)
	}
	return report.ReturnRange{Min: lo, Max: hi}, nil
}
