package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

func newActCommand() *cli.Command {
	return &cli.Command{
		Name:  "act",
		Usage: "print the policy's action for the next step of an episode",
		Description: "Prints a_h, the policy's action after the history o_1,a_1,…,o_h (it ends with an\n" +
			"observation). When the run has controller.arrow (the belief planner's policy) beside\n" +
			"model.arrow, act filters the model's belief along the history (one update per step, the\n" +
			"actions as given) and the controller decides there: every history has an action, and the\n" +
			"rows of policy.arrow agree with it where they hold the history. Otherwise (exact plans,\n" +
			"runs of earlier versions) it follows the history's observations through policy.arrow with\n" +
			"the lookup rule (step 1: the row with parent −1 and o_1; then the child with o_h; once no\n" +
			"row matches, the fallback_action of the last row found); the choice then depends on the\n" +
			"observations only, and a warning goes to stderr when a listed action differs from the one\n" +
			"the policy takes. When the fit mapped rare observations to <other> (--max-observations)\n" +
			"and model.arrow is beside the policy, an observation the model does not know is looked up\n" +
			"as <other>, with a warning.\n\n" +
			"A stochastic policy (a policy.arrow with a probability column) gives each history a\n" +
			"distribution over actions. act then follows the history's observations and the actions it\n" +
			"took (a warning names an action the policy never takes there; past it the policy plays\n" +
			"the fallback_action of its rows), prints the action drawn from the distribution at the\n" +
			"last observation on the first line and the distribution below it, with the seed of the\n" +
			"draw: the same --seed and history draw the same action.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "policy", Usage: "`PATH` of policy.arrow, or the directory holding it", Required: true},
			&cli.StringFlag{Name: "history", Usage: "comma-separated `o1,a1,o2,…,oh` (user symbols; spaces around an item are dropped)"},
			&cli.StringFlag{Name: "history-json", Usage: "the history as a JSON array of strings, `'[\"o1\",\"a1\",…,\"oh\"]'`, for symbols that are empty, hold commas or spaces"},
			&cli.BoolFlag{Name: "json", Usage: "print the node's values as one JSON object (for a stochastic policy with its choices and seed)"},
			&cli.Uint64Flag{Name: "seed", Usage: "for a stochastic policy: the `SEED` of the draw; the same seed and history draw the same action", DefaultText: "a new seed each call, printed with the draw"},
		},
		Action: actAction,
	}
}

// actAction prints the action of the history its flags give.
func actAction(c *cli.Context) error {
	obs, acts, err := historyArgs(c, "act")
	if err != nil {
		return err
	}
	seed := c.Uint64("seed")
	if !c.IsSet("seed") {
		seed = newSeed()
	}
	return runAct(c.Context, c.App.Writer, actOptions{
		policy: c.String("policy"), obs: obs, acts: acts, json: c.Bool("json"), stderr: c.App.ErrWriter, seed: seed,
	})
}

// errNoAction: the policy has no row for the history's first observation,
// so there is no action and no fallback.
var errNoAction = errkind.New(errkind.Data, "act: no action")

// errModelFile: the model.arrow beside the policy is not one psrlcb wrote.
var errModelFile = errkind.New(errkind.Data, "act: invalid model.arrow")

type actOptions struct {
	policy    string
	obs, acts []string // the history o_1..o_h and a_1..a_{h−1}
	json      bool
	stderr    io.Writer // warnings (nil: os.Stderr)
	seed      uint64    // the draw of a stochastic policy's action
}

// actResult is act's JSON output.
type actResult struct {
	Step   int    `json:"step"`
	Action string `json:"action"`
	// Node is the policy row of the history (of a stochastic policy: the
	// row of the drawn action), −1 once the history has left the tree
	// (the action is then the controller's, or without one the
	// fallback_action of the last row found).
	Node   int64 `json:"node"`
	InTree bool  `json:"in_tree"`
	// Controller is true when the run's controller (controller.arrow)
	// decided the action: it decides every history the model can follow.
	Controller bool     `json:"controller"`
	LastNode   int64    `json:"last_node"` // the last row found
	Fallback   string   `json:"fallback_action,omitempty"`
	ReachProb  *float64 `json:"reach_prob,omitempty"`
	ValueRew   *float64 `json:"value_reward,omitempty"`
	ValueBonus *float64 `json:"value_bonus,omitempty"`
	ValueLCB   *float64 `json:"value_lcb,omitempty"`
	// ValuesAlpha is the α the node's value_bonus and value_lcb are priced
	// at (the planning α); BoundAlpha that of the run's reported bound.
	ValuesAlpha *float64 `json:"values_alpha,omitempty"`
	BoundAlpha  *float64 `json:"bound_alpha,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// Choices are a stochastic policy's actions at the history, most
	// probable first, and Seed the seed of the draw of Action among them
	// (both absent for a deterministic policy).
	Choices []actChoice `json:"choices,omitempty"`
	Seed    *uint64     `json:"seed,omitempty"`
}

// jsonHint says how to give symbols the comma-separated form cannot.
const jsonHint = `an empty symbol, or one holding a comma, goes in --history-json '["o1","a1",""]'`

// historyArgs refuses positional arguments to the command name and reads
// the history from its flags (historyFlags).
func historyArgs(c *cli.Context, name string) (obs, acts []string, err error) {
	if err := noArgs(c, name); err != nil {
		return nil, nil, err
	}
	return historyFlags(c.IsSet("history"), c.String("history"), c.IsSet("history-json"), c.String("history-json"))
}

// historyFlags reads the history from exactly one of --history and
// --history-json.
func historyFlags(setText bool, text string, setJSON bool, js string) (obs, acts []string, err error) {
	switch {
	case setText && setJSON:
		return nil, nil, usagef("give the history once: --history or --history-json, not both")
	case setJSON:
		var items []string
		if err := json.Unmarshal([]byte(js), &items); err != nil {
			return nil, nil, usagef(`--history-json must be a JSON array of strings such as '["o1","a1","o2"]': %v`, err)
		}
		return splitHistory(items, "--history-json")
	case setText:
		return parseHistory(text)
	}
	return nil, nil, usagef("give the history with --history o1,a1,…,oh (or --history-json)")
}

// parseHistory splits "o1,a1,…,oh" into observations and actions.
func parseHistory(s string) (obs, acts []string, err error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil, usagef("--history is empty: give o1,a1,…,oh (%s)", jsonHint)
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
		if parts[i] == "" {
			return nil, nil, usagef("--history item %d is empty (%s)", i+1, jsonHint)
		}
	}
	return splitHistory(parts, "--history")
}

// splitHistory splits the items o1,a1,…,oh into observations and actions.
func splitHistory(parts []string, flag string) (obs, acts []string, err error) {
	if len(parts) == 0 {
		return nil, nil, usagef("%s is empty: give o1,a1,…,oh", flag)
	}
	if len(parts)%2 == 0 {
		return nil, nil, usagef("%s has %d items: it must end with an observation (o1,a1,…,oh)", flag, len(parts))
	}
	obs, acts = alternate(parts)
	return obs, acts, nil
}

// alternate splits the items o1,a1,…,oh of a history into its
// observations and its actions.
func alternate(parts []string) (obs, acts []string) {
	for i, p := range parts {
		if i%2 == 0 {
			obs = append(obs, p)
		} else {
			acts = append(acts, p)
		}
	}
	return obs, acts
}

// runAct prints the policy's action for the history of o: on its own, or
// with the node's figures as JSON; warnings go to o.stderr.
func runAct(_ context.Context, stdout io.Writer, o actOptions) error {
	stderr := o.stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	obs := slices.Clone(o.obs)
	tab, err := policy.OpenTable(o.policy)
	if err != nil {
		return err
	}
	defer tab.Close()
	meta := tab.Meta
	if tab.Horizon > 0 && len(obs) > tab.Horizon {
		return usagef("--history has %d observations; the policy's horizon is %d", len(obs), tab.Horizon)
	}
	res := actResult{Step: len(obs), LastNode: -1}
	if err := res.find(tab, o.policy, obs, o.acts, o.seed); err != nil {
		return err
	}
	res.InTree = res.Node >= 0
	return res.print(stdout, stderr, tab, meta, o.json)
}

// find sets res's action for the history obs, acts in tab (read from
// policyPath): the lookup of a deterministic policy, the draw with seed
// of a stochastic one.
func (res *actResult) find(tab *policy.Table, policyPath string, obs, acts []string, seed uint64) error {
	if pol := tab.Whole(); pol != nil && pol.Stochastic() {
		return res.draw(pol, policyPath, obs, acts, seed)
	}
	return res.lookup(tab, policyPath, obs, acts)
}

// print writes the warnings to stderr and the action to stdout, or with
// asJSON the action with the figures of its row in tab as JSON.
func (res *actResult) print(stdout, stderr io.Writer, tab *policy.Table, meta map[string]string, asJSON bool) error {
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "psrlcb: warning: %s\n", w)
	}
	if !asJSON {
		_, err := fmt.Fprintln(stdout, res.Action)
		if err == nil && res.Seed != nil {
			err = res.printChoices(stdout)
		}
		return err
	}
	if err := nodeFigures(tab, meta, res); err != nil {
		return err
	}
	return writeJSON(stdout, res)
}

// lookup finds the action of the history obs, acts in tab (read from
// policyPath) and the controller beside it, with the run's warnings and
// the observations mapped to the merged symbol.
func (res *actResult) lookup(tab *policy.Table, policyPath string, obs, acts []string) error {
	res.runWarnings(policyPath, false)
	if err := mapMerged(policyPath, obs, res); err != nil {
		return err
	}
	actions, node, last, err := lookupRow(tab, obs)
	if err != nil {
		return err
	}
	ctrl, err := policy.ControllerBeside(policyPath)
	if err != nil {
		return err
	}
	res.Action, res.Node, res.LastNode = actions[len(actions)-1], node, last
	return res.decide(ctrl, obs, acts, actions)
}

// lookupRow looks the history obs up in tab: the actions along its rows,
// its row and the last row it reached. A history whose first observation
// has no row is an error.
func lookupRow(tab *policy.Table, obs []string) ([]string, int64, int64, error) {
	actions, node, last, ok, err := tab.Lookup(obs)
	if err != nil {
		return nil, 0, 0, err
	}
	if !ok {
		return nil, 0, 0, noFirstRow(obs[0])
	}
	return actions, node, last, nil
}

// runWarnings adds the warnings of the run that wrote the policy at
// policyPath: its recommendation to keep the behaviour, and a
// deterministic table without a controller (a stochastic policy never
// has one).
func (res *actResult) runWarnings(policyPath string, stochastic bool) {
	if w := recommendationWarning(policyPath); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	if stochastic {
		return
	}
	if w := treeOnlyNote(policyPath); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
}

// decide lets the controller ctrl decide the action when it can follow
// the history; otherwise the table's action stands, with a warning for
// every step where the history took another action than the rows'.
func (res *actResult) decide(ctrl *policy.Controller, obs, acts, actions []string) error {
	switch a, follows, err := decideBy(ctrl, obs, acts); {
	case err != nil:
		return usagef("%v", err)
	case follows:
		// The controller decides every history, from the model's belief
		// after the history as given (actions included); a row of the
		// table stands for the history only when it took the rows'
		// actions.
		res.Controller, res.Action = true, a
		if !tookRowActions(acts, actions) {
			res.Node, res.LastNode = -1, -1
		}
	case ctrl != nil:
		res.Warnings = append(res.Warnings, "the model gives this history probability 0, so its controller cannot follow it; the table's rule (its rows, then the fallback_action) answers")
		fallthrough
	default:
		res.warnDepartures(acts, actions)
	}
	return nil
}

// tookRowActions says whether the history's actions acts are those of
// the policy's rows (actions) at every step.
func tookRowActions(acts, actions []string) bool {
	for h := range acts {
		if h >= len(actions) || acts[h] != actions[h] {
			return false
		}
	}
	return true
}

// warnDepartures warns of every step where the history took another
// action (acts) than the policy's rows (actions).
func (res *actResult) warnDepartures(acts, actions []string) {
	for h, a := range actions {
		if h < len(acts) && acts[h] != a {
			res.Warnings = append(res.Warnings, fmt.Sprintf("step %d: the history took action %q where the policy takes %q; the lookup follows the observations only", h+1, acts[h], a))
		}
	}
}

// mapMerged maps each observation of obs the fit merged into
// ingest.OtherSymbol (--max-observations), with a warning in res.
func mapMerged(path string, obs []string, res *actResult) error {
	merged, err := mergedObservations(path)
	if err != nil || merged == nil {
		return err
	}
	for h, ob := range obs {
		if !merged.known[ob] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("step %d: observation %q is not one of the model's %d observations; the fit mapped such rare observations to %q (--max-observations), so the lookup uses %q", h+1, ob, len(merged.known), ingest.OtherSymbol, ingest.OtherSymbol))
			obs[h] = ingest.OtherSymbol
		}
	}
	return nil
}

// nodeFigures fills res's figures of its table row (the row of the
// history, else the fallback of the last row it reached; a stochastic
// policy's draw has set the fallback it plays) for --json.
func nodeFigures(tab *policy.Table, meta map[string]string, res *actResult) error {
	if res.InTree {
		return res.treeFigures(tab, meta)
	}
	if res.LastNode >= 0 && res.Seed == nil {
		n, err := tab.Node(res.LastNode)
		if err != nil {
			return err
		}
		res.Fallback = n.Fallback
	}
	return nil
}

// treeFigures fills res's figures of the table row of its history: the
// fallback, reach probability and values, and the α of the values and of
// the bound when the policy's metadata records them.
func (res *actResult) treeFigures(tab *policy.Table, meta map[string]string) error {
	n, err := tab.Node(res.Node)
	if err != nil {
		return err
	}
	res.Fallback = n.Fallback
	res.ReachProb, res.ValueRew, res.ValueBonus, res.ValueLCB = &n.ReachProb, &n.ValueReward, &n.ValueBonus, &n.ValueLCB
	if va, ba := valuesAlpha(meta); !math.IsNaN(va) && !math.IsNaN(ba) {
		res.ValuesAlpha, res.BoundAlpha = &va, &ba
	}
	return nil
}

// recommendationWarning is a warning when the run that wrote the policy
// recommends keeping the behaviour policy ("" otherwise, or when path is
// not a run directory).
func recommendationWarning(path string) string {
	if !isRunDir(path) {
		return ""
	}
	m, err := report.ReadManifest(path)
	if err != nil || m.Headline.Recommendation != report.RecommendBehavior {
		return ""
	}
	if m.Fallback != nil && m.Fallback.Used {
		return fmt.Sprintf("the run's verdict recommends keeping the behaviour policy (evidence: %s); this policy is the %s, which stands in for it", m.Headline.Evidence, report.CandidateName(m.Fallback.Chosen))
	}
	return fmt.Sprintf("the run's verdict recommends keeping the behaviour policy (evidence: %s); this is the planned policy, for inspection only", m.Headline.Evidence)
}

// mergedVocab is the observation vocabulary of a fit that mapped rare
// observations to ingest.OtherSymbol (--max-observations).
type mergedVocab struct {
	known map[string]bool // the model's observations, OtherSymbol among them
}

// mergedObservations reads model.arrow beside the policy (policyPath is
// policy.arrow or its run directory) and returns the model's observation
// vocabulary when the fit mapped observations to ingest.OtherSymbol; nil
// when it did not, or when there is no model.arrow (a policy file on its
// own: observations are then looked up as given).
func mergedObservations(policyPath string) (*mergedVocab, error) {
	dir := runDirOf(policyPath)
	path := filepath.Join(dir, report.ModelFile)
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	return readModelVocab(path)
}

// readModelVocab reads the merged observations of the model file path
// from its param and observation columns.
func readModelVocab(path string) (*mergedVocab, error) {
	t, err := arrowio.ReadArrow(path)
	if err != nil {
		return nil, err
	}
	param, ok1 := t.Column("param")
	obs, ok2 := t.Column("observation")
	if !ok1 || !ok2 || len(param.String) != len(obs.String) {
		return nil, fmt.Errorf("%w: %s has no param or observation column", errModelFile, path)
	}
	return modelVocab(param.String, obs.String), nil
}

// modelVocab is the observation vocabulary of the model table's param and
// observation columns (its obs1 rows) when the table has "other" rows and
// OtherSymbol among the observations; nil otherwise.
func modelVocab(param, obs []string) *mergedVocab {
	v := &mergedVocab{known: map[string]bool{}}
	merged := false
	for i, p := range param {
		switch p {
		case "obs1":
			v.known[obs[i]] = true
		case "other":
			merged = true
		}
	}
	if !merged || !v.known[ingest.OtherSymbol] {
		return nil
	}
	return v
}

// decideBy is the controller's action after the history (follows false
// without a controller, or when the model cannot follow the history).
func decideBy(c *policy.Controller, obs, acts []string) (string, bool, error) {
	if c == nil {
		return "", false, nil
	}
	return c.Decide(obs, acts)
}

// treeOnlyNote is a note for a run whose policy is a table without a
// controller although its plan was not exact (a run written before
// controllers, or by the exact planner's pruned search): past its rows the
// policy plays the fallback_action. "" otherwise, and for a policy file
// outside a run directory.
func treeOnlyNote(policyPath string) string {
	dir := runDirOf(policyPath)
	if !isRunDir(dir) {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, report.ControllerFile)); err == nil {
		return ""
	}
	m, err := report.ReadManifest(dir)
	if err != nil || m.Headline.PlanExact {
		return ""
	}
	return fmt.Sprintf("the run has no %s (a run of an earlier psrlcb, or a pruned exact search): its policy is the table alone, and past its rows every history plays the fallback_action of the last row found", report.ControllerFile)
}

// runDirOf is the directory of a policy path: the path itself when it is
// a directory, else the directory holding the file.
func runDirOf(policyPath string) string {
	if st, err := os.Stat(policyPath); err == nil && st.IsDir() {
		return policyPath
	}
	return filepath.Dir(policyPath)
}
