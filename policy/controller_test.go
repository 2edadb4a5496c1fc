package policy_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// writeRun writes pol (policy.arrow, controller.arrow) and m
// (model.arrow) into a fresh directory, as a fit does.
func writeRun(t *testing.T, m *estimate.Model, pol *policy.Policy) string {
	t.Helper()
	dir := t.TempDir()
	if err := policy.WriteFile(filepath.Join(dir, policy.FileName), pol, nil); err != nil {
		t.Fatal(err)
	}
	if err := arrowio.WriteArrow(filepath.Join(dir, report.ModelFile), estimate.ModelTable(m)); err != nil {
		t.Fatal(err)
	}
	if pol.Ctrl != nil {
		if err := policy.WriteController(filepath.Join(dir, policy.ControllerFileName), pol.Ctrl, nil); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestControllerRoundTrip: a belief plan whose table is cut is written
// and read back; the policy read (table and controller) takes the same
// action as the planned one on every observation sequence of the model
// — past the table too — and has the same exact value under the model,
// and the table's rule alone (no controller) differs from it past the
// table, so the comparison can fail.
func TestControllerRoundTrip(t *testing.T) {
	m, b := setup(t, 240, pessimismtest.Spec{States: 3, Obs: 3, Actions: 3, Horizon: 5}, 300)
	b = b.WithAlpha(0.3)
	pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief, RowBudget: 30})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Ctrl == nil || st.RolloutMass <= 0 {
		t.Fatalf("no controller (%v) or no mass past the table (%v)", pol.Ctrl, st.RolloutMass)
	}
	dir := writeRun(t, m, pol)
	got, _, err := policy.ReadFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ctrl == nil {
		t.Fatal("ReadFile did not attach the controller")
	}
	if got.Ctrl.Vectors() != pol.Ctrl.Vectors() {
		t.Fatalf("%d α-vectors read, %d written", got.Ctrl.Vectors(), pol.Ctrl.Vectors())
	}
	treeOnly := &policy.Policy{Horizon: pol.Horizon, Nodes: pol.Nodes}
	differ := 0
	var walk func(prefix []string, want, read, tree policy.Cursor)
	walk = func(prefix []string, want, read, tree policy.Cursor) {
		for o := 0; o < m.NumObs; o++ {
			sym := m.ObsVocab[o]
			w, r, tr := want, read, tree
			aw, _, okw := w.Act(sym)
			ar, _, okr := r.Act(sym)
			at, _, _ := tr.Act(sym)
			if aw != ar || okw != okr {
				t.Fatalf("history %v,%s: planned policy takes %q (%v), the one read %q (%v)", prefix, sym, aw, okw, ar, okr)
			}
			if at != aw {
				differ++
			}
			if len(prefix)+1 < m.Horizon {
				walk(append(append([]string(nil), prefix...), sym, aw), w, r, tr)
			}
		}
	}
	walk(nil, *pol.NewCursor(), *got.NewCursor(), *treeOnly.NewCursor())
	if differ == 0 {
		t.Fatal("the table's fallback agrees with the controller on every history: the test cannot tell them apart")
	}
	v1, err := policy.ModelValue(m, b, pol)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := policy.ModelValue(m, b, got)
	if err != nil {
		t.Fatal(err)
	}
	if v1 != v2 {
		t.Fatalf("exact value %+v planned, %+v read back", v1, v2)
	}
	t.Logf("%d histories where the table's fallback differs from the controller", differ)
}

// TestControllerFileErrors: a controller without its model, for another
// model, or with a damaged row is refused with ErrFile, naming the file.
func TestControllerFileErrors(t *testing.T) {
	m, b := setup(t, 241, pessimismtest.Spec{States: 2, Obs: 3, Actions: 2, Horizon: 4}, 200)
	pol, _, err := policy.Plan(context.Background(), m, b.WithAlpha(0.3), policy.PlanOptions{Planner: policy.PlannerBelief, RowBudget: 10})
	if err != nil {
		t.Fatal(err)
	}
	dir := writeRun(t, m, pol)
	cpath := filepath.Join(dir, policy.ControllerFileName)
	other := pessimismtest.RandomModel(rand.New(rand.NewPCG(5, 1)), pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 4})
	if _, err := policy.ReadController(cpath, other); !errors.Is(err, policy.ErrFile) {
		t.Fatalf("a controller read for a model of another rank: %v", err)
	}
	tab, err := arrowio.ReadArrow(cpath)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tab.Columns {
		if c.Name == "state" {
			tab.Columns[i].Int32[0] = 7
		}
	}
	if err := arrowio.WriteArrow(cpath, tab); err != nil {
		t.Fatal(err)
	}
	if _, _, err := policy.ReadFile(dir); !errors.Is(err, policy.ErrFile) || !strings.Contains(fmt.Sprint(err), cpath) {
		t.Fatalf("a damaged row: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, report.ModelFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := policy.ReadFile(dir); !errors.Is(err, policy.ErrFile) {
		t.Fatalf("a controller without its model: %v", err)
	}
}

// TestControllerDecideOffPolicy: Decide follows the history as given;
// with the policy's own actions it takes the table's action, and an
// action the model does not know is an ErrOptions error.
func TestControllerDecideOffPolicy(t *testing.T) {
	m, b := setup(t, 242, pessimismtest.Spec{States: 3, Obs: 3, Actions: 3, Horizon: 3}, 300)
	pol, _, err := policy.Plan(context.Background(), m, b.WithAlpha(0.2), policy.PlanOptions{Planner: policy.PlannerBelief})
	if err != nil {
		t.Fatal(err)
	}
	root := pol.Nodes[0]
	if a, ok, err := pol.Ctrl.Decide([]string{root.Obs}, nil); err != nil || !ok || a != root.Action {
		t.Fatalf("step 1: %q %v %v, the table %q", a, ok, err, root.Action)
	}
	if _, _, err := pol.Ctrl.Decide([]string{root.Obs, m.ObsVocab[0]}, []string{"no-such-action"}); !errors.Is(err, policy.ErrOptions) {
		t.Fatalf("unknown action: %v", err)
	}
	if _, ok, err := pol.Ctrl.Decide([]string{"no-such-observation"}, nil); err != nil || ok {
		t.Fatalf("unknown observation: ok %v, %v", ok, err)
	}
}

// TestLongHorizonSizedForReading: at H = 30 (3³⁰ observation sequences)
// the default plan writes a table of at most DefaultRowBudget rows, and
// policy.arrow with controller.arrow stays under 10 MB, while the policy
// read back decides a history far past the table without a fallback.
func TestLongHorizonSizedForReading(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a 30-step model")
	}
	m, b := setup(t, 250, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 30}, 300)
	pol, st, err := policy.Plan(context.Background(), m, b.WithAlpha(0.3), policy.PlanOptions{Planner: policy.PlannerBelief})
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Nodes) > policy.DefaultRowBudget || st.RolloutMass <= 0 || st.UncoveredMass != 0 {
		t.Fatalf("%d rows (budget %d), rollout mass %v, fallback mass %v", len(pol.Nodes), policy.DefaultRowBudget, st.RolloutMass, st.UncoveredMass)
	}
	dir := writeRun(t, m, pol)
	size := int64(0)
	for _, name := range []string{policy.FileName, policy.ControllerFileName} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size > 10<<20 {
		t.Fatalf("policy.arrow and controller.arrow take %d bytes", size)
	}
	got, _, err := policy.ReadFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	cur := got.NewCursor()
	for h := 0; h < m.Horizon; h++ {
		a, node, ok := cur.Act(m.ObsVocab[h%m.NumObs])
		if !ok || a == "" {
			t.Fatalf("step %d: no action", h+1)
		}
		if h == m.Horizon-1 && node >= 0 {
			t.Fatal("the last step of the history is in the table: the test wants one past it")
		}
	}
	t.Logf("%d rows, %d bytes, rollout mass %.3f, stated gap %.3f", len(pol.Nodes), size, st.RolloutMass, st.GapBound)
}
