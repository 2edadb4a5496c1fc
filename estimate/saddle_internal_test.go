package estimate

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestPermuteStates: relabelling the states of a model leaves every
// episode's likelihood as it was (to 1e-12 relative), the swap of
// splitPairs applied twice gives the model back exactly, and flatPerm is
// the same relabelling on the extrapolation space.
func TestPermuteStates(t *testing.T) {
	for i, mc := range smallCases {
		t.Run(mc.name, func(t *testing.T) {
			m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, uint64(30+i))
			for _, form := range []*Model{m, firstActionCompact(m)} {
				perm := splitPairs(1, form.States)
				if form.States == 1 {
					perm = []int{0}
				}
				pm := permuteStates(form, perm)
				if err := pm.Validate(1e-12); err != nil {
					t.Fatal(err)
				}
				d := sampleDataset(m, 30, uint64(40+i))
				H := d.Horizon
				for k := 0; k < d.NumEpisodes(); k++ {
					obs, act, rew := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
					a, b := form.EpisodeLogLik(obs, act, rew), pm.EpisodeLogLik(obs, act, rew)
					if !relClose(a, b, 1e-12) {
						t.Fatalf("compact %v, episode %d: log-likelihood %v, relabelled %v", form.Compact, k, a, b)
					}
				}
				x, xb := flatten(form, nil), flatten(permuteStates(pm, perm), nil)
				for j := range x {
					if x[j] != xb[j] {
						t.Fatalf("compact %v: the swap twice changed parameter %d: %v → %v", form.Compact, j, x[j], xb[j])
					}
				}
				xp := flatten(pm, nil)
				for j, src := range flatPerm(form, perm) {
					if xp[j] != x[src] {
						t.Fatalf("compact %v: flatPerm[%d] = %d, but the relabelled parameter is %v, not %v", form.Compact, j, src, xp[j], x[src])
					}
				}
			}
		})
	}
}

// TestSplitPairs: the swap of each copied state with its copy, fixed
// points elsewhere, for both the doubling and a partial split.
func TestSplitPairs(t *testing.T) {
	cases := []struct {
		S, S2 int
		want  []int
	}{
		{2, 4, []int{2, 3, 0, 1}},
		{3, 5, []int{3, 4, 2, 0, 1}},
		{1, 2, []int{1, 0}},
		{4, 4, nil},
	}
	for _, c := range cases {
		got := splitPairs(c.S, c.S2)
		if len(got) != len(c.want) {
			t.Fatalf("splitPairs(%d, %d) = %v, want %v", c.S, c.S2, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("splitPairs(%d, %d) = %v, want %v", c.S, c.S2, got, c.want)
			}
		}
	}
}

// TestArnoldiTop: on random 40 × 40 matrices with real spectra (similar
// to diagonal matrices, as the EM map's Jacobian is similar to a
// symmetric one) whose largest eigenvalue stands apart from the others
// (spread over [−1, −0.3]), eight Arnoldi steps find the largest
// eigenvalue to 1e-3 and its eigenvector to 1e-2 (sine of the angle),
// against the eigendecomposition the matrix was built from. (With the
// others spread up to 0, eight steps do not resolve a top eigenvalue of
// 0.05: the probe sees a saddle whose unstable rate stands apart from
// EM's slow stable modes.)
func TestArnoldiTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 40
	for trial := 0; trial < 5; trial++ {
		// A = P D P⁻¹ with D spread over [−1, 0] but one eigenvalue 0.05 + trial·0.1.
		P := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				v := 0.1 * rng.NormFloat64()
				if i == j {
					v += 1
				}
				P.Set(i, j, v)
			}
		}
		var Pinv mat.Dense
		if err := Pinv.Inverse(P); err != nil {
			t.Fatal(err)
		}
		D := mat.NewDiagDense(n, nil)
		for i := 1; i < n; i++ {
			D.SetDiag(i, -0.3-0.7*float64(i)/n)
		}
		top := 0.05 + 0.1*float64(trial)
		D.SetDiag(0, top)
		var A mat.Dense
		A.Mul(P, D)
		A.Mul(&A, &Pinv)
		apply := func(v []float64) ([]float64, error) {
			w := mat.NewVecDense(n, nil)
			w.MulVec(&A, mat.NewVecDense(n, append([]float64(nil), v...)))
			return w.RawVector().Data, nil
		}
		v0 := make([]float64, n)
		for i := range v0 {
			v0[i] = rng.NormFloat64()
		}
		u, mu, err := arnoldiTop(v0, apply, 8)
		if err != nil || u == nil {
			t.Fatalf("trial %d: no Ritz vector (%v)", trial, err)
		}
		if math.Abs(mu-top) > 1e-3 {
			t.Errorf("trial %d: Ritz value %v, largest eigenvalue %v", trial, mu, top)
		}
		// The eigenvector of the top eigenvalue is P's first column.
		e := mat.Col(nil, 0, P)
		dot, ne := 0.0, 0.0
		for i := range e {
			dot += e[i] * u[i]
			ne += e[i] * e[i]
		}
		if s := math.Sqrt(max(0, 1-dot*dot/ne)); s > 1e-2 {
			t.Errorf("trial %d: sine of the angle to the eigenvector %v", trial, s)
		}
	}
}
