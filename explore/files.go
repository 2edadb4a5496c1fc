package explore

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/schemas"
)

// Schema metadata keys of the exploration policy files.
const (
	MetaRound       = "psrlcb.explore.round"        // k, the round the file serves
	MetaExploreStep = "psrlcb.explore.explore_step" // h: steps ≥ h take uniform actions
	MetaActions     = "psrlcb.explore.actions"      // JSON array of the uniform actions
	MetaPropensity  = "psrlcb.explore.propensity"   // 1/|A|, logged on uniform steps
)

// PolicyFileName is the name of the exploration policy file for switch
// step h.
func PolicyFileName(h int) string { return fmt.Sprintf("policy-h%d.arrow", h) }

// SwitchPolicy is the exploration policy ν(π^{k−1}, u) of one switch step:
// Tree (π^{k−1} cut to the steps before Step) decides steps 1..Step−1,
// and every step from Step on takes an action of Actions uniformly.
type SwitchPolicy struct {
	Round   int
	Step    int
	Actions []string
	Tree    *policy.Policy
}

// Cut returns the exploration policy for switch step h from π^{k−1} (nil
// for the first round: no steps before h are decided, so h must be 1 or the
// tree is empty): the nodes of steps 1..h−1. Plan and PlanBonus lay nodes
// out breadth-first, so they are a prefix of the node list.
func Cut(pi *policy.Policy, H, h, round int, actions []string) *SwitchPolicy {
	tree := &policy.Policy{Horizon: H}
	if pi != nil {
		for _, n := range pi.Nodes {
			if int(n.Step) < h {
				tree.Nodes = append(tree.Nodes, n)
			}
		}
	}
	return &SwitchPolicy{Round: round, Step: h, Actions: actions, Tree: tree}
}

// WritePolicies writes the next round's exploration policy as H policy
// files dir/policy-h{h}.arrow, h = 1..H, each in the policy.arrow layout
// (policy.WriteFile): the rows of π^k for steps 1..h−1, and in the schema
// metadata the round, the switch step h, the uniform actions and their
// propensity. A serving system assigns each episode a switch step h (round
// robin or uniformly at random), answers steps < h with the tree (`psrlcb
// act --policy dir/policy-h{h}.arrow`, propensity 1) and steps ≥ h with a
// uniform draw among the actions (propensity 1/|A|), and logs round and
// explore_step = h on every row of the episode (`psrlcb explore-act` does
// both). pi nil (no previous round) gives H files of uniform exploration.
func WritePolicies(dir string, pi *policy.Policy, H, round int, actions []string, meta map[string]string) error {
	if len(actions) == 0 {
		return fmt.Errorf("%w: no actions to explore", ErrOptions)
	}
	if pi != nil && pi.Stochastic() {
		return fmt.Errorf("%w: the exploration files serve one action per observation history with propensity 1; a stochastic policy cannot be written as one", ErrOptions)
	}
	acts, err := json.Marshal(actions)
	if err != nil {
		return err
	}
	for h := 1; h <= H; h++ {
		sp := Cut(pi, H, h, round, actions)
		md := switchMeta(meta, round, h, string(acts), len(actions))
		if err := policy.WriteFile(filepath.Join(dir, PolicyFileName(h)), sp.Tree, md); err != nil {
			return err
		}
	}
	return nil
}

// switchMeta is meta with the keys of switch step h's file: the round,
// the step, the uniform actions (acts, a JSON array of nActs actions) and
// their propensity.
func switchMeta(meta map[string]string, round, h int, acts string, nActs int) map[string]string {
	md := map[string]string{}
	for k, v := range meta {
		md[k] = v
	}
	md[MetaRound] = strconv.Itoa(round)
	md[MetaExploreStep] = strconv.Itoa(h)
	md[MetaActions] = acts
	md[MetaPropensity] = strconv.FormatFloat(1/float64(nActs), 'g', -1, 64)
	return md
}

// ReadPolicy reads one exploration policy file written by WritePolicies.
func ReadPolicy(path string) (*SwitchPolicy, error) {
	tree, meta, err := policy.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := checkDeterministic(path, tree); err != nil {
		return nil, err
	}
	sp := &SwitchPolicy{Tree: tree}
	if err := sp.readMeta(path, meta); err != nil {
		return nil, err
	}
	if err := sp.checkSteps(path); err != nil {
		return nil, err
	}
	return sp, nil
}

// checkDeterministic refuses a stochastic tree read from path: Act looks
// a history up by its observations alone and logs propensity 1, which
// holds only for a deterministic tree.
func checkDeterministic(path string, tree *policy.Policy) error {
	if tree.Stochastic() {
		return fmt.Errorf("%w: %s is a stochastic policy (it has a probability column); an exploration policy must be a deterministic tree", ErrData, path)
	}
	return nil
}

// checkSteps checks that the tree read from path has no node at the
// steps from Step on, which are uniform.
func (sp *SwitchPolicy) checkSteps(path string) error {
	for _, n := range sp.Tree.Nodes {
		if int(n.Step) >= sp.Step {
			return fmt.Errorf("%w: %s: node %d at step %d, but steps from %d on are uniform", ErrData, path, n.ID, n.Step, sp.Step)
		}
	}
	return nil
}

// readMeta sets the round, the switch step and the uniform actions from
// the metadata of the file path.
func (sp *SwitchPolicy) readMeta(path string, meta map[string]string) error {
	var err error
	if sp.Round, err = strconv.Atoi(meta[MetaRound]); err != nil {
		return fmt.Errorf("%w: %s: metadata %s: %q is not a round", ErrData, path, MetaRound, meta[MetaRound])
	}
	if sp.Step, err = strconv.Atoi(meta[MetaExploreStep]); err != nil || sp.Step < 1 {
		return fmt.Errorf("%w: %s: metadata %s: %q is not a step", ErrData, path, MetaExploreStep, meta[MetaExploreStep])
	}
	if err := json.Unmarshal([]byte(meta[MetaActions]), &sp.Actions); err != nil || len(sp.Actions) == 0 {
		return fmt.Errorf("%w: %s: metadata %s: %q is not a list of actions", ErrData, path, MetaActions, meta[MetaActions])
	}
	return nil
}

// Act returns the exploration action for the observation history
// o_1..o_h (the policy's own actions in between) and the propensity to
// log: the tree's action with propensity 1 for h < Step, the action
// Actions[⌊u·|A|⌋] with propensity 1/|A| from Step on, where u ∈ [0,1) is
// the caller's uniform random number.
func (sp *SwitchPolicy) Act(obs []string, u float64) (action string, propensity float64, err error) {
	h := len(obs)
	if h == 0 {
		return "", 0, fmt.Errorf("%w: empty history", ErrOptions)
	}
	if h >= sp.Step {
		return sp.uniform(u)
	}
	a, _, ok := sp.Tree.Lookup(obs)
	if !ok {
		return "", 0, fmt.Errorf("%w: the exploration policy has no row for the first observation %q", ErrData, obs[0])
	}
	return a, 1, nil
}

// uniform is the action of the steps from Step on, Actions[⌊u·|A|⌋]
// with propensity 1/|A|, for the uniform draw u ∈ [0,1).
func (sp *SwitchPolicy) uniform(u float64) (string, float64, error) {
	if !(u >= 0 && u < 1) {
		return "", 0, fmt.Errorf("%w: uniform draw %v outside [0,1)", ErrOptions, u)
	}
	i := min(int(math.Floor(u*float64(len(sp.Actions)))), len(sp.Actions)-1)
	return sp.Actions[i], 1 / float64(len(sp.Actions)), nil
}

// TaggedRow is one row of exploration logs: the input schema of psrlcb
// (pomdp.LogRow) with the optional round and explore_step columns.
type TaggedRow struct {
	schemas.Row
	Round       int64 `parquet:"round"`
	ExploreStep int64 `parquet:"explore_step"`
}

// WriteTaggedParquet writes logs with their per-episode rounds and switch
// steps as Parquet, atomically (temporary file renamed into place).
func WriteTaggedParquet(path string, l *pomdp.Logs, rounds, steps []int) error {
	K := l.NumEpisodes()
	if len(rounds) != K || len(steps) != K {
		return fmt.Errorf("%w: %d rounds and %d steps for %d episodes", ErrData, len(rounds), len(steps), K)
	}
	return atomicfile.Write(path, func(f *os.File) error { return writeTaggedRows(f, l, rounds, steps) })
}

// writeTaggedRows writes the rows of l, episode by episode, with their
// episode's round and switch step as zstd-compressed Parquet to f.
func writeTaggedRows(f *os.File, l *pomdp.Logs, rounds, steps []int) error {
	w := parquet.NewGenericWriter[TaggedRow](f, parquet.Compression(&parquet.Zstd))
	rows := make([]TaggedRow, 0, l.Horizon)
	for k := range l.NumEpisodes() {
		rows = rows[:0]
		for h := range l.Horizon {
			r := l.Row(k*l.Horizon + h)
			rows = append(rows, TaggedRow{Row: r, Round: int64(rounds[k]), ExploreStep: int64(steps[k])})
		}
		if _, err := w.Write(rows); err != nil {
			return err
		}
	}
	return w.Close()
}
