package estimate_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// TestReadModelRoundTrip: model.arrow read back gives the model that was
// written, table for table (categorical and Gaussian rewards, stationary
// and per-step dynamics), from the file or from its run directory.
func TestReadModelRoundTrip(t *testing.T) {
	for i, sp := range []pessimismtest.Spec{
		{States: 3, Obs: 4, Actions: 2, Horizon: 3},
		{States: 2, Obs: 3, Actions: 3, Horizon: 2, Stationary: true, Gaussian: true},
	} {
		m := pessimismtest.RandomModel(rand.New(rand.NewPCG(uint64(i), 7)), sp)
		m.ReturnMin, m.ReturnMax = -1.5, 2
		dir := t.TempDir()
		if err := arrowio.WriteArrow(filepath.Join(dir, "model.arrow"), estimate.ModelTable(m)); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{dir, filepath.Join(dir, "model.arrow")} {
			checkReadBack(t, fmt.Sprintf("spec %d", i), path, m)
		}
	}
}

// TestReadModelCompact: the Compact form (emission rows of action "",
// reward rows of observation "") reads back as written.
func TestReadModelCompact(t *testing.T) {
	m := pessimismtest.RandomModel(rand.New(rand.NewPCG(9, 7)), pessimismtest.Spec{States: 3, Obs: 5, Actions: 2, Horizon: 3, Stationary: true})
	S, A, V := m.States, m.NumActions, len(m.RewardValues)
	m.Compact = true
	m.Emit = [][]float64{append([]float64(nil), m.Emit[0][:S*m.NumObs]...)} // action 0's rows
	cells := make([]float64, S*A*S*V)
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			for s2 := 0; s2 < S; s2++ {
				full := ((s*A+a)*S + s2) * m.NumObs * V // o = 0's cell in the full layout
				copy(cells[((s*A+a)*S+s2)*V:][:V], m.RewardProb[0][full:full+V])
			}
		}
	}
	m.RewardProb = [][]float64{cells}
	m.ReturnMin, m.ReturnMax = -1, 1
	m.Prepare()
	if err := m.Validate(1e-9); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := arrowio.WriteArrow(filepath.Join(dir, "model.arrow"), estimate.ModelTable(m)); err != nil {
		t.Fatal(err)
	}
	checkReadBack(t, "compact", dir, m)
}

// checkReadBack: estimate.ReadModel(path) gives m, as written (test
// length at least 1, prepared).
func checkReadBack(t *testing.T, name, path string, m *estimate.Model) {
	t.Helper()
	got, err := estimate.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	want := *m
	want.TestLength = max(m.TestLength, 1)
	want.Prepare()
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("%s: read back\n%+v\nwrote\n%+v", name, got, &want)
	}
}

// TestReadModelErrors: a file that is not a model, or whose rows do not
// fit the sizes it declares, is an error naming the file.
func TestReadModelErrors(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.arrow")
	if err := arrowio.WriteArrow(other, arrowio.Table{Columns: []arrowio.Column{{Name: "x", Int64: []int64{1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := estimate.ReadModel(other); err == nil {
		t.Error("a table without model columns was read as a model")
	}
	m := pessimismtest.RandomModel(rand.New(rand.NewPCG(1, 1)), pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 2})
	tb := estimate.ModelTable(m)
	tb.Meta["psrlcb.states"] = "1" // rows name state 1
	bad := filepath.Join(dir, "bad.arrow")
	if err := arrowio.WriteArrow(bad, tb); err != nil {
		t.Fatal(err)
	}
	if _, err := estimate.ReadModel(bad); err == nil {
		t.Error("rows outside the declared sizes were accepted")
	}
	if _, err := estimate.ReadModel(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing run directory: %v", err)
	}
	if _, err := estimate.ReadModel(bad); !errors.Is(err, estimate.ErrModel) {
		t.Errorf("a bad model: %v is not estimate.ErrModel", err)
	}
}
