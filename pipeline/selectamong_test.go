package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// TestSelectAmongKeepsTheModelThatPlansBetter gives the α selection two
// models of one rank, as the rank search's growth does when several of
// its starts win (estimate.RankChoice.Alternatives): a fit of the tiger
// logs with its memory (which door the listens point to) and the same
// rank's split of a one-state fit, which holds no memory and which EM,
// held to three steps here, cannot leave. Whichever comes first, the
// selection keeps the one whose plan has the higher cross-fitted value,
// the fit with the memory, and says so in a note.
func TestSelectAmongKeepsTheModelThatPlansBetter(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs")
	}
	ctx := context.Background()
	d, err := ingest.Read(ctx, []string{filepath.Join("..", "examples", "tiger-logs.parquet")}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good, err := estimate.Fit(ctx, d, estimate.Options{Rank: 2, Seed: 1, SkipThetaMin: true})
	if err != nil {
		t.Fatal(err)
	}
	one, err := estimate.Fit(ctx, d, estimate.Options{Rank: 1, Seed: 1, SkipThetaMin: true})
	if err != nil {
		t.Fatal(err)
	}
	flat := estimate.SplitStart(estimate.Options{}, one.Model, 2, 1).Start
	for _, c := range []struct {
		first, other *estimate.Model
		want         string
	}{{good.Model, flat, "model 1 of them"}, {flat, good.Model, "model 2 of them"}} {
		o, err := Options{Estimate: estimate.Options{MaxIter: 3}, Seed: 3}.resolved()
		if err != nil {
			t.Fatal(err)
		}
		r := newFitRun(d, o)
		r.useRank(&estimate.RankChoice{Rank: 2, Model: c.first, Alternatives: []*estimate.Model{c.other}})
		if err := r.chooseAlpha(ctx); err != nil {
			t.Fatal(err)
		}
		note := strings.Join(r.out.Notes, " ")
		if !strings.Contains(note, c.want) {
			t.Errorf("want %q kept, notes: %s", c.want, note)
		}
		if r.eopts.Start != r.cf.planA {
			t.Errorf("the final fit does not start from the kept part-A model")
		}
	}
}
