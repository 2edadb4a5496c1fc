package policy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// BenchmarkPlan measures exact planning on the full history tree of
// |O|=4, |A|=3, H=7 (Σ_h 4^h 3^{h−1} ≈ 1.3·10⁷ nodes) with S=8 states and
// one-step tests (d_h = |O| = 4).
func BenchmarkPlan(b *testing.B) {
	m, bonus := setup(b, 50, pessimismtest.Spec{States: 8, Obs: 4, Actions: 3, Horizon: 7}, 2000)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("O=4,A=3,H=7,S=8,d=4,workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			var nodes int64
			for i := 0; i < b.N; i++ {
				_, st, err := policy.Plan(context.Background(), m, bonus, policy.PlanOptions{Workers: w})
				if err != nil {
					b.Fatal(err)
				}
				if !st.Exact {
					b.Fatal("not exact")
				}
				nodes += st.Nodes
			}
			b.ReportMetric(float64(nodes)/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}

// BenchmarkPlanApprox measures the approximate planner at the size of the
// end-to-end benchmark (|O|=8, |A|=4, H=10, S=8): its tree has ~10¹⁵ nodes,
// so the search prunes at the threshold that fits the node budget.
func BenchmarkPlanApprox(b *testing.B) {
	m, bonus := setup(b, 51, pessimismtest.Spec{States: 8, Obs: 8, Actions: 4, Horizon: 10}, 20000)
	for _, budget := range []int64{1_000_000} {
		b.Run(fmt.Sprintf("O=8,A=4,H=10,S=8,budget=%d", budget), func(b *testing.B) {
			b.ReportAllocs()
			var nodes int64
			var gap float64
			for i := 0; i < b.N; i++ {
				_, st, err := policy.Plan(context.Background(), m, bonus, policy.PlanOptions{Budget: budget, Planner: policy.PlannerExact})
				if err != nil {
					b.Fatal(err)
				}
				if st.Exact {
					b.Fatal("exact")
				}
				nodes += st.Nodes
				gap = st.GapBound
			}
			b.ReportMetric(float64(nodes)/b.Elapsed().Seconds(), "nodes/s")
			b.ReportMetric(gap, "gap")
		})
	}
}

// BenchmarkPlanBelief measures the belief planner at r = 20 latent
// states, |O| = 21, |A| = 5, H = 20 (a history tree of ~10⁴⁵ nodes), α = 1,
// per-step tables: backups/s counts point–action backups of the value
// iteration (every tangent round), rows the policy table written.
func BenchmarkPlanBelief(b *testing.B) {
	m, bonus := setup(b, 52, pessimismtest.Spec{States: 20, Obs: 21, Actions: 5, Horizon: 20}, 4000)
	for _, rows := range []int64{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("r=20,O=21,A=5,H=20,rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			var backups int64
			var st *policy.PlanStats
			for i := 0; i < b.N; i++ {
				var err error
				_, st, err = policy.Plan(context.Background(), m, bonus, policy.PlanOptions{Planner: policy.PlannerBelief, RowBudget: rows})
				if err != nil {
					b.Fatal(err)
				}
				backups += st.Backups
			}
			b.ReportMetric(float64(backups)/b.Elapsed().Seconds(), "backups/s")
			b.ReportMetric(float64(st.Nodes), "rows")
			b.ReportMetric(st.UncoveredMass, "uncovered")
			b.ReportMetric(st.GapBound, "gap")
		})
	}
}
