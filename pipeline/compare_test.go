package pipeline

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/report"
)

// TestCompare: fit --compare on the example logs (uniform behaviour over
// three actions, propensity 1/3 at every step). The uniform context-free
// table has importance ratio 1 at every step, so its trajectory
// importance-sampling estimate is the logs' mean return exactly, with
// every episode effective. The run's own policy comes first, and its
// model value, computed here by ope's look-ahead, equals the headline's
// model value from the planner's tables.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs")
	}
	dir := t.TempDir()
	uniform := filepath.Join(dir, "uniform.arrow")
	third := 1.0 / 3
	err := arrowio.WriteArrow(uniform, arrowio.Table{Columns: []arrowio.Column{
		{Name: "observation", String: []string{"*", "*", "*"}},
		{Name: "action", String: []string{"listen", "open-left", "open-right"}},
		{Name: "probability", Float64: []float64{third, third, third}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	o := Options{Estimate: estimate.Options{Rank: 2, Restarts: 1, MaxIter: 30},
		Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{0.3}}, Seed: 1,
		Compare: []string{uniform}}
	res, err := Run(context.Background(), logs, o)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Run.Manifest
	if len(m.Compared) != 2 || m.Compared[0].Policy != report.PlanName || m.Compared[1].Policy != uniform {
		t.Fatalf("compared %+v", m.Compared)
	}
	is := m.Compared[1].Get(ope.EstIS)
	if is == nil {
		t.Fatal("no importance-sampling row")
	}
	behaviour := float64(m.Headline.BehaviorUnits)
	if math.Abs(float64(is.Value)-behaviour) > 1e-9*math.Abs(behaviour) || math.Abs(float64(is.ESS)-float64(m.Episodes)) > 1e-6 {
		t.Errorf("uniform policy: is %v (ESS %v), want the logged mean %v over %d episodes", is.Value, is.ESS, behaviour, m.Episodes)
	}
	own := m.Compared[0].Get(ope.EstModel)
	if own == nil || math.Abs(float64(own.Value)-float64(m.Headline.ModelValueUnits)) > 1e-6*math.Max(1, math.Abs(float64(m.Headline.ModelValueUnits))) {
		t.Errorf("the run's policy: model value %+v, headline %v", own, m.Headline.ModelValueUnits)
	}
	for _, e := range []string{ope.EstDR, ope.EstWDR} {
		if r := m.Compared[1].Get(e); r == nil || !math.IsNaN(float64(r.Value)) || r.Reason != ope.ReasonCompareDR {
			t.Errorf("%s: %+v, want skipped with ope.ReasonCompareDR", e, r)
		}
	}
	if m.Parameters["compare"] == nil {
		t.Error("the compared policies are not among the run's parameters (run id)")
	}
}

// TestCompareCheckedFirst: a --compare file that is no policy fails the
// run before the logs are read, as a data error.
func TestCompareCheckedFirst(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.arrow")
	if err := arrowio.WriteArrow(bad, arrowio.Table{Columns: []arrowio.Column{{Name: "x", Float64: []float64{1}}}}); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), []string{"/nonexistent-logs.parquet"}, Options{Compare: []string{bad}})
	if !errors.Is(err, ope.ErrTarget) {
		t.Errorf("err %v, want ope.ErrTarget before the (missing) logs are read", err)
	}
}
