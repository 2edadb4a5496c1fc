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
