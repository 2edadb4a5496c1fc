package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/psrlcb/psrlcb/policy"
)

// actChoice is one action a stochastic policy may take at the history,
// in act's JSON output.
type actChoice struct {
	Action string  `json:"action"`
	Prob   float64 `json:"probability"`
	// Node is the action's policy row, −1 once the history has left the
	// rows (the action is then their fallback_action).
	Node int64 `json:"node"`
}

// maxSeed bounds the seeds act draws itself: below 2⁵³ every JSON reader
// holds the printed seed exactly, so it repeats the draw.
const maxSeed = 1<<53 - 1

// newSeed is a fresh seed for act's draw, from the system's randomness,
// so that repeated calls without --seed draw independently.
func newSeed() uint64 {
	var b [8]byte
	crand.Read(b[:]) // never returns an error: it fills b entirely
	return binary.LittleEndian.Uint64(b[:]) & maxSeed
}

// draw follows the history obs, acts through the stochastic policy pol
// (read from policyPath) by its observations and the actions it took,
// and draws the action at its last observation from the policy's
// distribution there with seed.
func (res *actResult) draw(pol *policy.Policy, policyPath string, obs, acts []string, seed uint64) error {
	res.runWarnings(policyPath, true)
	if err := mapMerged(policyPath, obs, res); err != nil {
		return err
	}
	c := pol.NewCursor()
	if err := res.follow(c, obs, acts); err != nil {
		return err
	}
	last := obs[len(obs)-1]
	choices, ok := c.Choices(last)
	if !ok {
		return noFirstRow(obs[0])
	}
	action, node, _ := c.Sample(last, uniform(seed, obs, acts))
	res.Action, res.Node, res.Choices, res.Seed = action, node, sortedChoices(choices), &seed
	if node >= 0 {
		res.LastNode = node
	} else {
		res.Fallback = action // past the rows the draw is their fallback_action
	}
	return nil
}

// noFirstRow is the error of a history whose first observation has no
// row in the policy.
func noFirstRow(o string) error {
	return fmt.Errorf("%w: the policy has no row for the first observation %q", errNoAction, o)
}

// follow moves c along the steps of the history before its last
// observation, by each observation and the action taken, keeping the
// last row found and warning of every action the policy never takes.
func (res *actResult) follow(c *policy.Cursor, obs, acts []string) error {
	for h, a := range acts {
		choices, ok := c.Choices(obs[h])
		if !ok {
			return noFirstRow(obs[0])
		}
		prob, _ := c.Take(obs[h], a)
		if prob == 0 {
			res.Warnings = append(res.Warnings, neverTakesWarning(h+1, a, choices))
			continue
		}
		if i := slices.IndexFunc(choices, func(ch policy.Choice) bool { return ch.Action == a }); i >= 0 && choices[i].Node >= 0 {
			res.LastNode = choices[i].Node
		}
	}
	return nil
}

// neverTakesWarning says that the history took action a at step h, where
// the policy takes only choices.
func neverTakesWarning(h int, a string, choices []policy.Choice) string {
	w := fmt.Sprintf("step %d: the history took action %q, which the policy never takes there (it takes %s)", h, a, choiceList(sortedChoices(choices)))
	if choices[0].Node >= 0 {
		w += "; the history leaves the policy's rows, and from there on the policy plays their fallback_action"
	}
	return w
}

// choiceList lists choices for a message: "L" alone, or "L" (0.7), "R" (0.3).
func choiceList(choices []actChoice) string {
	if len(choices) == 1 {
		return fmt.Sprintf("%q", choices[0].Action)
	}
	parts := make([]string, len(choices))
	for i, ch := range choices {
		parts[i] = fmt.Sprintf("%q (%.3g)", ch.Action, ch.Prob)
	}
	return strings.Join(parts, ", ")
}

// sortedChoices are choices most probable first (ties in the policy's
// row order).
func sortedChoices(choices []policy.Choice) []actChoice {
	out := make([]actChoice, len(choices))
	for i, ch := range choices {
		out[i] = actChoice{Action: ch.Action, Prob: ch.Prob, Node: ch.Node}
	}
	slices.SortStableFunc(out, func(a, b actChoice) int {
		switch {
		case a.Prob > b.Prob:
			return -1
		case a.Prob < b.Prob:
			return 1
		}
		return 0
	})
	return out
}

// uniform is the number in [0, 1) that draws the action of the history
// obs, acts: from a generator seeded by seed, on a stream of the
// history's own, so that one seed draws independently across histories
// and always the same for one history.
func uniform(seed uint64, obs, acts []string) float64 {
	return rand.New(rand.NewPCG(seed, historyKey(obs, acts))).Float64()
}

// historyKey is a hash of the history o_1,a_1,…,o_h.
func historyKey(obs, acts []string) uint64 {
	items := make([]string, 0, len(obs)+len(acts))
	for h, o := range obs {
		items = append(items, o)
		if h < len(acts) {
			items = append(items, acts[h])
		}
	}
	b, _ := json.Marshal(items) // strings always marshal; JSON keeps the items apart
	f := fnv.New64a()
	f.Write(b)
	return f.Sum64()
}

// printChoices writes, below the drawn action, the distribution it was
// drawn from and the seed that repeats the draw.
func (res *actResult) printChoices(w io.Writer) error {
	fmt.Fprintf(w, "drawn from the policy's actions at step %d (--seed %d draws the same):\n", res.Step, *res.Seed)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ch := range res.Choices {
		fmt.Fprintf(tw, "  %s\t%.3g\n", ch.Action, ch.Prob)
	}
	return tw.Flush()
}
