package pessimism

import (
	"math"

	"github.com/psrlcb/psrlcb/errkind"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/psrlcb/psrlcb/estimate"
)

// Sentinel errors of the pessimism stage.
var (
	// ErrOptions is returned for option values out of range.
	ErrOptions = errkind.New(errkind.Options, "pessimism: invalid options")
	// ErrData is returned when the model, dataset and splits do not fit
	// together, or a feature is not finite.
	ErrData = errkind.New(errkind.Data, "pessimism: invalid data")
)

const (
	// DefaultLambda is λ of U_h = λI + Σψ̄ψ̄ᵀ; see the package comment.
	DefaultLambda = 1.0
	// DefaultAlpha is α of b̂ = min{α·sqrt(Σ_h‖ψ̄̂(τ_h)‖²_{U_h⁻¹}), 1}.
	// With λ = 1, a history whose feature directions were each seen about
	// n times in its split has ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} ≈ 1/(n+1), so α = 1
	// gives b̂ ≈ sqrt(H/n): the order of the standard error of an H-step
	// return in [0,1] estimated from n samples per step. The theoretical
	// α̂ of the paper (TheoryAlpha) is orders of magnitude larger for any
	// realistic K and saturates the bonus at 1 on every trajectory, where
	// it no longer ranks policies.
	DefaultAlpha = 1.0
	// explicitMaxDim: up to this d_h the quadratic form uses an explicit
	// U_h⁻¹ (d² multiply–adds, no call overhead); above it the Cholesky
	// factor and blas64.Trsv (d²/2 flops, better conditioned).
	explicitMaxDim = 32
	// blockSize is the number of episodes per partial sum of U_h. Fixed so
	// that the order of floating-point additions, hence U_h, does not
	// depend on the number of workers.
	blockSize = 1024
)

// Options configure Build. The zero value means the documented defaults.
type Options struct {
	// Lambda is λ (default DefaultLambda); it must be positive.
	Lambda float64
	// Workers bounds the goroutines (default GOMAXPROCS).
	Workers int
	// USummer, when not nil, computes the sums of U_h over the episodes
	// (a data-parallel engine: psrbeam); nil sums them in this process.
	USummer USummer
}

// Bonus holds the factorised U_0..U_{H−1} and the coefficient α. It is
// safe for concurrent use (the methods taking a scratch slice need one
// per goroutine).
type Bonus struct {
	// Alpha is α; Build sets DefaultAlpha, WithAlpha changes it.
	Alpha float64
	// Lambda is λ.
	Lambda float64
	// Horizon is H.
	Horizon int
	// Dims[h] is d_h = FeatureDim(h), h = 0..H−1.
	Dims []int
	// Counts[h] is |D_h|, the number of histories U_h was built from.
	Counts []int
	// Root is ‖ψ̄̂(τ_0)‖²_{U_0⁻¹}, the term of the empty history shared
	// by every trajectory.
	Root float64

	m     *estimate.Model
	fz    *estimate.Featurizer // the model's, checked when built; each walker clones it
	inv   [][]float64          // explicit U_h⁻¹, row-major, for d_h ≤ explicitMaxDim
	upper []blas64.Triangular  // Cholesky factor R of U_h = RᵀR otherwise
	u     []*mat.SymDense      // U_h itself, kept for tests and reports
}

// Model is the model whose features the bonus measures.
func (b *Bonus) Model() *estimate.Model { return b.m }

// U returns a copy of U_h.
func (b *Bonus) U(h int) *mat.SymDense {
	return mat.NewSymDense(b.Dims[h], append([]float64(nil), b.u[h].RawSymmetric().Data...))
}

// WithAlpha returns a copy of b with coefficient alpha (sharing the
// factorisations).
func (b *Bonus) WithAlpha(alpha float64) *Bonus {
	c := *b
	c.Alpha = alpha
	return &c
}

// Value is b̂ = min{α·sqrt(sum), 1} for sum = Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹}.
func (b *Bonus) Value(sum float64) float64 {
	if b.Alpha == 0 || sum <= 0 {
		return 0
	}
	return min(b.Alpha*math.Sqrt(sum), 1)
}

// StepNorm2 is ‖x‖²_{U_h⁻¹} = xᵀU_h⁻¹x for a feature x of length d_h.
func (b *Bonus) StepNorm2(h int, x []float64) float64 {
	var scratch []float64
	if b.inv[h] == nil {
		scratch = make([]float64, b.Dims[h])
	}
	return b.StepNorm2Scratch(h, x, scratch)
}

// ScratchLen is the length of the scratch slice StepNorm2Scratch needs.
func (b *Bonus) ScratchLen() int {
	n := 0
	for h, d := range b.Dims {
		if b.inv[h] == nil && d > n {
			n = d
		}
	}
	return n
}

// StepNorm2Scratch is StepNorm2 without allocation; scratch must have
// length ≥ ScratchLen().
func (b *Bonus) StepNorm2Scratch(h int, x, scratch []float64) float64 {
	d := b.Dims[h]
	x = x[:d]
	if inv := b.inv[h]; inv != nil {
		return math.Max(quadForm(inv, x), 0)
	}
	// U = RᵀR, so xᵀU⁻¹x = ‖R⁻ᵀx‖².
	y := scratch[:d]
	copy(y, x)
	blas64.Trsv(blas.Trans, b.upper[h], blas64.Vector{N: d, Inc: 1, Data: y})
	q := 0.0
	for _, v := range y {
		q += v * v
	}
	return q
}

// quadForm is xᵀ·A·x for the row-major len(x)×len(x) matrix A, skipping
// the rows of zero entries of x.
func quadForm(A, x []float64) float64 {
	d := len(x)
	q := 0.0
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		row := A[i*d : (i+1)*d]
		s := 0.0
		for j, xj := range x {
			s += row[j] * xj
		}
		q += xi * s
	}
	return q
}

// Trajectory computes ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} for h = 0..H−1 along the
// trajectory with observation and action codes obs, act (at least H−1 of
// each; later entries are ignored) and returns b̂(τ_H) and the per-step
// terms.
func (b *Bonus) Trajectory(obs, act []int) (float64, []float64) {
	H := b.Horizon
	per := make([]float64, H)
	w := newWalker(b)
	w.start()
	per[0] = b.Root
	sum := b.Root
	for h := 1; h < H; h++ {
		q := w.step(h, obs[h-1], act[h-1])
		per[h] = q
		sum += q
	}
	return b.Value(sum), per
}

// walker filters one trajectory and measures its features.
type walker struct {
	b             *Bonus
	m             *estimate.Model
	fz            *estimate.Featurizer
	bel, pred, fe []float64
	scratch       []float64
	prevAct       int
}

func newWalker(b *Bonus) *walker {
	m := b.m
	d := 0
	for _, x := range b.Dims {
		d = max(d, x)
	}
	return &walker{b: b, m: m, fz: b.fz.Clone(), bel: make([]float64, m.States),
		pred: make([]float64, m.States), fe: make([]float64, d), scratch: make([]float64, b.ScratchLen())}
}

func (w *walker) start() { w.m.Prior(w.bel) }

// advance consumes o_h and a_h (h ≥ 1): afterwards pred is the
// distribution of s_{h+1} given τ_h. Probability-zero histories give an
// all-zero pred, hence a zero feature.
func (w *walker) advance(h, o, a int) {
	if h == 1 {
		w.m.ObserveFirst(w.bel, o)
	} else {
		w.m.Correct(h-1, w.pred, w.prevAct, o, w.bel)
	}
	w.m.Predict(h, w.bel, a, w.pred)
	w.prevAct = a
}

// feature returns ψ̄̂(τ_h) of the history advanced so far (h ≥ 1).
func (w *walker) feature(h int) []float64 {
	f := w.fe[:w.b.Dims[h]]
	w.fz.Feature(h, w.pred, w.prevAct, f)
	return f
}

// step is advance followed by the norm of the new feature.
func (w *walker) step(h, o, a int) float64 {
	w.advance(h, o, a)
	return w.b.StepNorm2Scratch(h, w.feature(h), w.scratch)
}
