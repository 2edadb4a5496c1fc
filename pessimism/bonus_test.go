package pessimism_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// tol is the agreement required between the factorised quadratic forms
// and the explicit-inverse reference; both are O(d·cond(U)·eps) accurate.
const tol = 1e-9

func TestFeaturizerMatchesModel(t *testing.T) {
	for _, sp := range []pessimismtest.Spec{
		{States: 3, Obs: 2, Actions: 2, Horizon: 4, TestLength: 1},
		{States: 3, Obs: 2, Actions: 3, Horizon: 4, TestLength: 2},
		{States: 2, Obs: 3, Actions: 2, Horizon: 4, TestLength: 3},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(sp.TestLength)))
		m := pessimismtest.RandomModel(rng, sp)
		fz, err := estimate.NewFeaturizer(m)
		if err != nil {
			t.Fatal(err)
		}
		for h := 0; h < m.Horizon; h++ {
			pred := make([]float64, m.States)
			for s := range pred {
				pred[s] = rng.Float64()
			}
			a := rng.IntN(m.NumActions)
			want := make([]float64, m.FeatureDim(h))
			got := make([]float64, m.FeatureDim(h))
			if err := m.FeatureFromPred(h, pred, a, want); err != nil {
				t.Fatal(err)
			}
			fz.Feature(h, pred, a, got)
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-15 {
					t.Fatalf("m=%d h=%d entry %d: got %v want %v", sp.TestLength, h, i, got[i], want[i])
				}
			}
		}
	}
}

// reference computes the per-step terms of a trajectory with U_h built
// from Model.Feature and inverted explicitly by mat.Inverse.
func reference(t *testing.T, m *estimate.Model, d *ingest.Dataset, splits [][]int, lambda float64, obs, act []int) []float64 {
	t.Helper()
	H := m.Horizon
	out := make([]float64, H)
	for h := 0; h < H; h++ {
		dim := m.FeatureDim(h)
		u := mat.NewDense(dim, dim, nil)
		for i := 0; i < dim; i++ {
			u.Set(i, i, lambda)
		}
		f := make([]float64, dim)
		for _, k := range splits[h] {
			o := make([]int, h)
			a := make([]int, h)
			for j := 0; j < h; j++ {
				o[j], a[j] = int(d.Obs[k*H+j]), int(d.Act[k*H+j])
			}
			if err := m.Feature(o, a, f); err != nil {
				t.Fatal(err)
			}
			v := mat.NewVecDense(dim, f)
			u.RankOne(u, 1, v, v)
		}
		var inv mat.Dense
		if err := inv.Inverse(u); err != nil {
			t.Fatal(err)
		}
		if err := m.Feature(obs[:h], act[:h], f); err != nil {
			t.Fatal(err)
		}
		v := mat.NewVecDense(dim, f)
		out[h] = mat.Inner(v, &inv, v)
	}
	return out
}

func TestBonusMatchesExplicitInverse(t *testing.T) {
	for _, sp := range []pessimismtest.Spec{
		{States: 3, Obs: 3, Actions: 2, Horizon: 4},
		{States: 4, Obs: 4, Actions: 3, Horizon: 3, TestLength: 2}, // d_0 = 48 > explicitMaxDim: triangular-solve path
	} {
		rng := rand.New(rand.NewPCG(2, uint64(sp.Obs)))
		m := pessimismtest.RandomModel(rng, sp)
		d := pessimismtest.Sample(rng, m, nil, 300)
		splits := pessimismtest.EvenSplits(300, m.Horizon)
		for _, lambda := range []float64{1, 0.01} {
			b, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{Lambda: lambda})
			if err != nil {
				t.Fatal(err)
			}
			for trial := 0; trial < 20; trial++ {
				obs := make([]int, m.Horizon)
				act := make([]int, m.Horizon)
				for i := range obs {
					obs[i], act[i] = rng.IntN(m.NumObs), rng.IntN(m.NumActions)
				}
				want := reference(t, m, d, splits, lambda, obs, act)
				bv, got := b.Trajectory(obs, act)
				sum := 0.0
				for h := range want {
					if math.Abs(got[h]-want[h]) > tol*math.Max(1, want[h]) {
						t.Fatalf("d_0=%d λ=%v h=%d: got %v want %v", b.Dims[0], lambda, h, got[h], want[h])
					}
					sum += want[h]
				}
				if wb := math.Min(b.Alpha*math.Sqrt(sum), 1); math.Abs(bv-wb) > tol {
					t.Fatalf("bonus %v want %v", bv, wb)
				}
			}
		}
	}
}

func TestBonusMonotoneInData(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	m := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 3})
	d := pessimismtest.Sample(rng, m, nil, 200)
	full := pessimismtest.EvenSplits(200, 3)
	fewer := make([][]int, 3)
	for h := range full {
		fewer[h] = full[h][:len(full[h])/3]
	}
	ctx := context.Background()
	bFew, err := pessimism.Build(ctx, m, d, fewer, pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bAll, err := pessimism.Build(ctx, m, d, full, pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bFew, bAll = bFew.WithAlpha(0.3), bAll.WithAlpha(0.3)
	strict := 0
	for _, obs := range [][]int{{0, 0, 0}, {0, 1, 0}, {1, 1, 1}, {1, 0, 1}} {
		for _, act := range [][]int{{0, 0, 0}, {1, 0, 1}, {1, 1, 1}} {
			vf, pf := bFew.Trajectory(obs, act)
			va, pa := bAll.Trajectory(obs, act)
			if va > vf+1e-15 {
				t.Fatalf("more data raised b̂ from %v to %v", vf, va)
			}
			for h := range pf {
				if pa[h] > pf[h]+1e-15 {
					t.Fatalf("more data raised step %d term from %v to %v", h, pf[h], pa[h])
				}
			}
			if va < vf {
				strict++
			}
		}
	}
	if strict == 0 {
		t.Fatal("more data never lowered the bonus")
	}
}

func TestBuildDeterministicAcrossWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	m := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 2})
	K := 5000 // several blocks per split
	d := pessimismtest.Sample(rng, m, nil, K)
	splits := pessimismtest.EvenSplits(K, 2)
	var ref *pessimism.Bonus
	for _, w := range []int{1, 2, 3} {
		b, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = b
			continue
		}
		for h := 0; h < 2; h++ {
			if !mat.Equal(ref.U(h), b.U(h)) {
				t.Fatalf("U_%d differs between worker counts", h)
			}
		}
	}
}

func TestBonusValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	m := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 2})
	d := pessimismtest.Sample(rng, m, nil, 10)
	b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(10, 2), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ alpha, sum, want float64 }{
		{0, 5, 0}, {1, 0.25, 0.5}, {2, 0.0625, 0.5}, {10, 1, 1}, {1, 4, 1},
	}
	for _, c := range cases {
		if got := b.WithAlpha(c.alpha).Value(c.sum); got != c.want {
			t.Errorf("Value(α=%v, %v) = %v, want %v", c.alpha, c.sum, got, c.want)
		}
	}
	// With no data U_h = λI: the step-0 term is ‖P(o_1)‖²/λ.
	b0, err := pessimism.Build(context.Background(), m, d, make([][]int, 2), pessimism.Options{Lambda: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, 2)
	m.FirstObsProbs(p)
	if want := (p[0]*p[0] + p[1]*p[1]) / 2; math.Abs(b0.Root-want) > 1e-15 {
		t.Fatalf("root term %v, want %v", b0.Root, want)
	}
}

func TestBuildErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	m := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 2})
	d := pessimismtest.Sample(rng, m, nil, 10)
	ctx := context.Background()
	ok := pessimismtest.EvenSplits(10, 2)
	if _, err := pessimism.Build(ctx, m, d, ok, pessimism.Options{Lambda: -1}); !errors.Is(err, pessimism.ErrOptions) {
		t.Errorf("negative λ: %v", err)
	}
	if _, err := pessimism.Build(ctx, m, d, ok, pessimism.Options{Lambda: math.NaN()}); !errors.Is(err, pessimism.ErrOptions) {
		t.Errorf("NaN λ: %v", err)
	}
	if _, err := pessimism.Build(ctx, m, d, [][]int{{0}, {10}}, pessimism.Options{}); !errors.Is(err, pessimism.ErrData) {
		t.Errorf("episode index out of range: %v", err)
	}
	if _, err := pessimism.Build(ctx, m, d, ok[:1], pessimism.Options{}); !errors.Is(err, pessimism.ErrData) {
		t.Errorf("wrong number of splits: %v", err)
	}
	bad := *d
	bad.Horizon = 5
	if _, err := pessimism.Build(ctx, m, &bad, ok, pessimism.Options{}); !errors.Is(err, pessimism.ErrData) {
		t.Errorf("horizon mismatch: %v", err)
	}
	if _, err := pessimism.Build(ctx, nil, d, ok, pessimism.Options{}); !errors.Is(err, pessimism.ErrData) {
		t.Errorf("nil model: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := pessimism.Build(cctx, m, d, ok, pessimism.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestEpisodesMatchTrajectory(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	m := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 3})
	d := pessimismtest.Sample(rng, m, nil, 50)
	b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(50, 3), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := b.Episodes(context.Background(), d, 2)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 50; k++ {
		obs := []int{int(d.Obs[3*k]), int(d.Obs[3*k+1]), int(d.Obs[3*k+2])}
		act := []int{int(d.Act[3*k]), int(d.Act[3*k+1]), int(d.Act[3*k+2])}
		v, per := b.Trajectory(obs, act)
		sum := 0.0
		for h := range per {
			if float32(per[h]) != e.Norm2[3*k+h] {
				t.Fatalf("episode %d step %d: %v vs %v", k, h, e.Norm2[3*k+h], per[h])
			}
			sum += per[h]
		}
		if e.Sum(k) != sum {
			t.Fatalf("episode %d: sum %v, want %v", k, e.Sum(k), sum)
		}
		if b.Value(e.Sum(k)) != v {
			t.Fatalf("episode %d bonus differs", k)
		}
	}
}

// halvesSummer is a USummer that sums each split in two halves with
// PartialUSums, as a data-parallel engine would, and counts its calls.
type halvesSummer struct{ calls int }

func (s *halvesSummer) USums(_ context.Context, m *estimate.Model, d *ingest.Dataset, splits [][]int) ([][]float64, error) {
	s.calls++
	a, b := make([][]int, len(splits)), make([][]int, len(splits))
	for h, sp := range splits {
		a[h], b[h] = sp[:len(sp)/2], sp[len(sp)/2:]
	}
	x, err := pessimism.PartialUSums(m, d, a)
	if err != nil {
		return nil, err
	}
	y, err := pessimism.PartialUSums(m, d, b)
	if err != nil {
		return nil, err
	}
	for h := range x {
		for i := range x[h] {
			x[h][i] += y[h][i]
		}
	}
	return x, nil
}

// TestExternalUSums: a bonus built from sums added in parts by a USummer
// equals the one built in process (every episode's bonus and the root
// term within 1e-12: the sums are added in another order).
func TestExternalUSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	m := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 4})
	d := pessimismtest.Sample(rng, m, nil, 400)
	splits := pessimismtest.EvenSplits(400, 4)
	want, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &halvesSummer{}
	got, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{USummer: s})
	if err != nil {
		t.Fatal(err)
	}
	if s.calls != 1 {
		t.Fatalf("the summer was called %d times, want once", s.calls)
	}
	if math.Abs(got.Root-want.Root) > 1e-12 {
		t.Errorf("root term %v, want %v", got.Root, want.Root)
	}
	for k := 0; k < 400; k++ {
		obs, act := make([]int, 4), make([]int, 4)
		for h := range 4 {
			obs[h], act[h] = int(d.Obs[4*k+h]), int(d.Act[4*k+h])
		}
		gv, _ := got.Trajectory(obs, act)
		wv, _ := want.Trajectory(obs, act)
		if math.Abs(gv-wv) > 1e-12 {
			t.Fatalf("episode %d: bonus %v, want %v", k, gv, wv)
		}
	}
}
