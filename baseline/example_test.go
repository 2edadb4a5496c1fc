package baseline_test

import (
	"context"
	"fmt"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/ingest"
)

// Ten one-step episodes: "safe" logged eight times, seven with reward 1.5
// and one with 0; "risky" twice, both with reward 2. Returns span [0, 2], so
// the rescaled means are r̂(safe) = 7·0.75/8 = 0.65625 and r̂(risky) = 1.
// With c = 0.5: Q(safe) = 0.65625 − 0.5/√8 = 0.47947 and Q(risky) =
// 1 − 0.5/√2 = 0.64645, so the planner takes "risky". With c = 1:
// Q(safe) = 0.65625 − 1/√8 = 0.30270 > Q(risky) = 1 − 1/√2 = 0.29289, so
// the scarcer action loses. Cloning takes the most frequent action, "safe",
// whose mean rescaled return is 0.65625.
func Example() {
	d := &ingest.Dataset{
		Horizon:  1,
		ObsVocab: []string{"start"},
		ActVocab: []string{"risky", "safe"},
		Obs:      make([]uint16, 10),
		Act:      []uint16{1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
		Reward:   []float64{1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 0, 2, 2},
	}
	ctx := context.Background()
	for _, c := range []float64{0.5, 1} {
		p, err := baseline.TabularLCB(ctx, d, baseline.TabularOptions{C: c})
		if err != nil {
			fmt.Println(err)
			return
		}
		n := p.Nodes[0]
		fmt.Printf("lcb c=%g: %s reward %.5f bonus %.5f lcb %.5f\n", c, n.Action, n.ValueReward, n.ValueBonus, n.ValueLCB)
	}
	p, err := baseline.BehaviorCloning(ctx, d, baseline.CloneOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("clone: %s reward %.5f\n", p.Nodes[0].Action, p.Nodes[0].ValueReward)
	// Output:
	// lcb c=0.5: risky reward 1.00000 bonus 0.35355 lcb 0.64645
	// lcb c=1: safe reward 0.65625 bonus 0.35355 lcb 0.30270
	// clone: safe reward 0.65625
}
