package pipeline

import (
	"os"

	"fmt"

	"github.com/psrlcb/psrlcb/policy"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/progress"
)

// emBudget is the most EM iterations a fit with the options o can run:
// MaxIter per start, Restarts starts per rank, and with an automatic rank
// the ranks 1..MaxRank on the training share before the final fit. It is
// the stage's progress total; a start that converges early is credited
// with its unused iterations when the next rank begins, so the bar never
// stops short of its total.
func emBudget(o estimate.Options) int64 {
	restarts, iters, maxRank := o.Restarts, o.MaxIter, o.MaxRank
	if restarts <= 0 {
		restarts = estimate.DefaultRestarts
	}
	if iters <= 0 {
		iters = estimate.DefaultMaxIter
	}
	if maxRank <= 0 {
		maxRank = estimate.DefaultMaxRank
	}
	fits := int64(1) // the final fit at the chosen rank
	if o.Rank == 0 && o.Start == nil {
		fits += int64(maxRank)
	}
	return fits * int64(restarts) * int64(iters)
}

// emProgress forwards EM iterations to a progress.Reporter in units of
// the iteration budget (emBudget). Calls are serialised by package
// estimate.
type emProgress struct {
	p       progress.Reporter
	maxIter int64
	// iters[k] is the last iteration seen of start k of the current
	// (data, rank) group; credited counts the finished groups.
	group    string
	iters    map[int]int64
	credited int64
	reported int64
}

func newEMProgress(p progress.Reporter, o estimate.Options) *emProgress {
	it := int64(o.MaxIter)
	if it <= 0 {
		it = estimate.DefaultMaxIter
	}
	return &emProgress{p: p, maxIter: it, iters: map[int]int64{}}
}

func (e *emProgress) Iteration(r estimate.TraceRow) {
	g := fmt.Sprintf("%s/%d", r.Data, r.Rank)
	if g != e.group {
		// Starts of the previous group are done: credit their budget.
		e.credited += int64(len(e.iters)) * e.maxIter
		e.group, e.iters = g, map[int]int64{}
	}
	e.iters[r.Restart] = max(e.iters[r.Restart], min(int64(r.Iter), e.maxIter))
	done := e.credited
	for _, n := range e.iters {
		done += n
	}
	if done > e.reported {
		e.p.Advance(done-e.reported, fmt.Sprintf("%s rank %d start %d iter %d loglik %.6g", r.Data, r.Rank, r.Restart+1, r.Iter, r.LogLik))
		e.reported = done
	}
}

// planNodes is the planner's work in nodes: the whole history tree when it
// fits the budget (exact planning), the approximate search's budget
// otherwise.
func planNodes(m *estimate.Model, budget int64) int64 {
	tree := 0.0
	level := 1.0
	for h := 1; h <= m.Horizon; h++ {
		// Decision points (τ_{h−1}, o_h): |O|^h·|A|^{h−1} at depth h.
		level *= float64(m.NumObs)
		if h > 1 {
			level *= float64(m.NumActions)
		}
		tree += level
		if tree > float64(budget) {
			return min(budget, policy.DefaultSearchBudget)
		}
	}
	return int64(tree)
}

// fileBytes is the total size of the inputs, the ingest stage's work.
func fileBytes(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
