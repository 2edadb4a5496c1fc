package pessimism

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// Build computes U_0..U_{H−1} from the length-h prefixes of the episodes
// of splits[h] under the model m and factorises them (eq. (6) of
// Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405)). The returned Bonus has Alpha = DefaultAlpha.
func Build(ctx context.Context, m *estimate.Model, d *ingest.Dataset, splits [][]int, opts Options) (*Bonus, error) {
	b, err := prepareBonus(m, d, splits, opts)
	if err != nil {
		return nil, err
	}
	sums, err := b.uSums(ctx, d, splits, opts)
	if err != nil {
		return nil, err
	}
	if err := b.factorAll(sums); err != nil {
		return nil, err
	}
	return b, nil
}

// prepareBonus checks Build's options and inputs and returns its Bonus
// before the sums (newBonus, with the featurizer of m).
func prepareBonus(m *estimate.Model, d *ingest.Dataset, splits [][]int, opts Options) (*Bonus, error) {
	lambda, err := opts.lambda()
	if err != nil {
		return nil, err
	}
	if err := checkInputs(m, d, splits); err != nil {
		return nil, err
	}
	fz, err := estimate.NewFeaturizer(m)
	if err != nil {
		return nil, err
	}
	return newBonus(m, fz, lambda, splits), nil
}

// factorAll factorises U_h from its sum for every h (factor) and sets
// Root, the squared norm at the empty history.
func (b *Bonus) factorAll(sums [][]float64) error {
	for h := 0; h < b.Horizon; h++ {
		if err := b.factor(h, sums[h]); err != nil {
			return err
		}
	}
	f0 := make([]float64, b.Dims[0])
	b.fz.Feature(0, b.m.Init, 0, f0)
	b.Root = b.StepNorm2(0, f0)
	return nil
}

// lambda is Options.Lambda, DefaultLambda when it is 0; it must be a
// positive number.
func (opts Options) lambda() (float64, error) {
	lambda := opts.Lambda
	if lambda == 0 {
		lambda = DefaultLambda
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return 0, fmt.Errorf("%w: lambda %v must be a positive number", ErrOptions, opts.Lambda)
	}
	return lambda, nil
}

// newBonus is Build's Bonus before its sums are factorised: the feature
// dimension and the number of prefixes of every step.
func newBonus(m *estimate.Model, fz *estimate.Featurizer, lambda float64, splits [][]int) *Bonus {
	H := m.Horizon
	b := &Bonus{Alpha: DefaultAlpha, Lambda: lambda, Horizon: H, m: m, fz: fz,
		Dims: make([]int, H), Counts: make([]int, H),
		inv: make([][]float64, H), upper: make([]blas64.Triangular, H), u: make([]*mat.SymDense, H)}
	for h := 0; h < H; h++ {
		b.Dims[h] = m.FeatureDim(h)
		b.Counts[h] = len(splits[h])
	}
	return b
}

// uSums is the U_h sums (upper triangles) of eq. (6): from the external
// summer opts.USummer, whose shapes are checked, or localSums.
func (b *Bonus) uSums(ctx context.Context, d *ingest.Dataset, splits [][]int, opts Options) ([][]float64, error) {
	if opts.USummer == nil {
		return localSums(ctx, b, d, splits, opts.Workers)
	}
	sums, err := opts.USummer.USums(ctx, b.m, d, splits)
	if err != nil {
		return nil, err
	}
	for h := 0; h < b.Horizon; h++ {
		if h >= len(sums) || len(sums[h]) != b.Dims[h]*b.Dims[h] {
			return nil, fmt.Errorf("pessimism: the U_h sums of the external summer have the wrong shape at h = %d", h)
		}
	}
	return sums, nil
}

// USummer computes Σ_{k∈splits[h]} ψ̄̂(τ_h^k)ψ̄̂(τ_h^k)ᵀ of eq. (6) for every
// h (the upper triangle, row-major d_h×d_h, zeros below) outside this
// process: a data-parallel engine runs PartialUSums on parts of the
// episodes and adds the parts.
type USummer interface {
	USums(ctx context.Context, m *estimate.Model, d *ingest.Dataset, splits [][]int) ([][]float64, error)
}

// PartialUSums is the USummer's unit of work: for every h, the sum of
// ψ̄̂(τ_h)ψ̄̂(τ_h)ᵀ over the episodes of d listed in eps[h] (upper
// triangle, row-major d_h×d_h). The sums of disjoint parts of the splits
// add up to Build's sums (in another order of the additions).
func PartialUSums(m *estimate.Model, d *ingest.Dataset, eps [][]int) ([][]float64, error) {
	H := m.Horizon
	if len(eps) != H {
		return nil, fmt.Errorf("%w: %d episode lists for %d steps", ErrData, len(eps), H)
	}
	if err := checkInputs(m, d, eps); err != nil {
		return nil, err
	}
	fz, err := estimate.NewFeaturizer(m)
	if err != nil {
		return nil, err
	}
	return accumulateAll(newWalker(sumBonus(m, fz)), d, eps)
}

// sumBonus is the part of a Bonus that PartialUSums' walker needs: the
// model, its featurizer and the feature dimension of every step.
func sumBonus(m *estimate.Model, fz *estimate.Featurizer) *Bonus {
	H := m.Horizon
	b := &Bonus{Horizon: H, m: m, fz: fz, Dims: make([]int, H), inv: make([][]float64, H)}
	for h := range H {
		b.Dims[h] = m.FeatureDim(h)
	}
	return b
}

// accumulateAll is accumulate at every step h over the episodes eps[h].
func accumulateAll(w *walker, d *ingest.Dataset, eps [][]int) ([][]float64, error) {
	out := make([][]float64, len(eps))
	for h := range eps {
		var err error
		if out[h], err = accumulate(w, d, h, eps[h]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sumTask is one task of localSums: the block [lo, hi) of splits[h].
type sumTask struct{ h, lo, hi int }

// sumTasks cuts the splits into blocks of blockSize episodes. Each task
// writes the upper triangle of its partial sum into its own slot; slots
// are added in order.
func sumTasks(splits [][]int) []sumTask {
	var tasks []sumTask
	for h := range splits {
		for lo := 0; lo < len(splits[h]); lo += blockSize {
			tasks = append(tasks, sumTask{h, lo, min(lo+blockSize, len(splits[h]))})
		}
	}
	return tasks
}

// localSums is USums in this process, in parallel over blocks of each
// split.
func localSums(ctx context.Context, b *Bonus, d *ingest.Dataset, splits [][]int, workers int) ([][]float64, error) {
	tasks := sumTasks(splits)
	partial := make([][]float64, len(tasks))
	err := parallel.ForWith(ctx, len(tasks), workers, func() *walker { return newWalker(b) }, func(wk *walker, i int) error {
		t := tasks[i]
		var err error
		partial[i], err = accumulate(wk, d, t.h, splits[t.h][t.lo:t.hi])
		return err
	})
	if err != nil {
		return nil, err
	}
	return b.addPartials(tasks, partial), nil
}

// addPartials is the U_h sums of every h: the tasks' partial sums added
// in task order.
func (b *Bonus) addPartials(tasks []sumTask, partial [][]float64) [][]float64 {
	sums := make([][]float64, b.Horizon)
	for h := range sums {
		sums[h] = make([]float64, b.Dims[h]*b.Dims[h])
	}
	for i, t := range tasks {
		addInto(sums[t.h], partial[i])
	}
	return sums
}

// addInto adds src into dst entry by entry.
func addInto(dst, src []float64) {
	for j, v := range src {
		dst[j] += v
	}
}

// accumulate sums ψ̄̂(τ_h)ψ̄̂(τ_h)ᵀ (upper triangle, row-major d×d) over
// the length-h prefixes of the given episodes.
func accumulate(w *walker, d *ingest.Dataset, h int, eps []int) ([]float64, error) {
	dim := w.b.Dims[h]
	out := make([]float64, dim*dim)
	for _, k := range eps {
		f := w.prefixFeature(d, k, h)
		if i := addUpperOuter(out, f, dim); i >= 0 {
			return nil, fmt.Errorf("%w: episode %s step %d: feature entry %d is %v", ErrData, d.EpisodeIDs[k], h, i, f[i])
		}
	}
	return out, nil
}

// addUpperOuter adds the upper triangle of f fᵀ to the row-major dim×dim
// out, row by row. It stops at the first entry of f that is not finite
// and returns its index, or -1 when there is none.
func addUpperOuter(out, f []float64, dim int) int {
	for i, x := range f {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return i
		}
		if x == 0 {
			continue
		}
		row := out[i*dim : (i+1)*dim]
		for j := i; j < dim; j++ {
			row[j] += x * f[j]
		}
	}
	return -1
}

// prefixFeature is ψ̄̂(τ_h) of episode k's length-h prefix (w's scratch).
func (w *walker) prefixFeature(d *ingest.Dataset, k, h int) []float64 {
	H := d.Horizon
	if h == 0 {
		f := w.fe[:w.b.Dims[0]]
		w.fz.Feature(0, w.m.Init, 0, f)
		return f
	}
	w.start()
	for t := 1; t <= h; t++ {
		w.advance(t, int(d.Obs[k*H+t-1]), int(d.Act[k*H+t-1]))
	}
	return w.feature(h)
}

// factor sets U_h = λI + sum (upper triangle) and factorises it.
func (b *Bonus) factor(h int, sum []float64) error {
	dim := b.Dims[h]
	u := b.regularised(h, sum)
	b.u[h] = u
	var ch mat.Cholesky
	if ok := ch.Factorize(u); !ok {
		return fmt.Errorf("%w: U_%d is not positive definite (λ = %v)", ErrData, h, b.Lambda)
	}
	if dim <= explicitMaxDim {
		return b.setInverse(h, &ch)
	}
	var r mat.TriDense
	ch.UTo(&r)
	b.upper[h] = r.RawTriangular()
	return nil
}

// regularised is U_h = λI + sum as a symmetric matrix, from the upper
// triangle of the row-major sum.
func (b *Bonus) regularised(h int, sum []float64) *mat.SymDense {
	dim := b.Dims[h]
	u := mat.NewSymDense(dim, nil)
	for i := 0; i < dim; i++ {
		for j := i; j < dim; j++ {
			v := sum[i*dim+j]
			if i == j {
				v += b.Lambda
			}
			u.SetSym(i, j, v)
		}
	}
	return u
}

// setInverse stores U_h⁻¹ (row-major, dense) from its Cholesky factor.
func (b *Bonus) setInverse(h int, ch *mat.Cholesky) error {
	dim := b.Dims[h]
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return fmt.Errorf("%w: U_%d: %v", ErrData, h, err)
	}
	full := make([]float64, dim*dim)
	for i := 0; i < dim; i++ {
		for j := 0; j < dim; j++ {
			full[i*dim+j] = inv.At(i, j)
		}
	}
	b.inv[h] = full
	return nil
}

// checkInputs verifies that model, dataset and splits fit together.
func checkInputs(m *estimate.Model, d *ingest.Dataset, splits [][]int) error {
	if err := checkPresent(m, d); err != nil {
		return err
	}
	if err := checkShapes(m, d); err != nil {
		return err
	}
	if err := checkCodes(m, d); err != nil {
		return err
	}
	return checkSplits(d.NumEpisodes(), m.Horizon, splits)
}

// checkPresent checks that there is a model and a dataset.
func checkPresent(m *estimate.Model, d *ingest.Dataset) error {
	if m == nil {
		return fmt.Errorf("%w: no model", ErrData)
	}
	if d == nil {
		return fmt.Errorf("%w: no dataset", ErrData)
	}
	return nil
}

// checkShapes checks the model's sizes and that the dataset's horizon and
// vocabulary match them.
func checkShapes(m *estimate.Model, d *ingest.Dataset) error {
	H := m.Horizon
	if H <= 0 || m.States <= 0 || m.NumObs <= 0 || m.NumActions <= 0 {
		return fmt.Errorf("%w: model sizes S=%d O=%d A=%d H=%d", ErrData, m.States, m.NumObs, m.NumActions, H)
	}
	if d.Horizon != H {
		return fmt.Errorf("%w: dataset horizon %d, model horizon %d", ErrData, d.Horizon, H)
	}
	if d.NumObs() != m.NumObs || d.NumActions() != m.NumActions {
		return fmt.Errorf("%w: dataset has %d observations and %d actions, model %d and %d", ErrData, d.NumObs(), d.NumActions(), m.NumObs, m.NumActions)
	}
	return nil
}

// checkCodes verifies that d's arrays hold its episodes and that its
// codes lie in m's vocabularies.
func checkCodes(m *estimate.Model, d *ingest.Dataset) error {
	K, H := d.NumEpisodes(), m.Horizon
	if len(d.Obs) != K*H || len(d.Act) != K*H {
		return fmt.Errorf("%w: dataset arrays do not hold %d episodes of %d steps", ErrData, K, H)
	}
	for i := range d.Obs {
		if int(d.Obs[i]) >= m.NumObs || int(d.Act[i]) >= m.NumActions {
			return fmt.Errorf("%w: episode %d step %d: code out of vocabulary", ErrData, i/H, i%H+1)
		}
	}
	return nil
}

// checkSplits verifies that there are H splits of indexes of the K
// episodes.
func checkSplits(K, H int, splits [][]int) error {
	if len(splits) != H {
		return fmt.Errorf("%w: %d splits for horizon %d", ErrData, len(splits), H)
	}
	for h, s := range splits {
		for _, k := range s {
			if k < 0 || k >= K {
				return fmt.Errorf("%w: split %d holds episode index %d, dataset has %d episodes", ErrData, h, k, K)
			}
		}
	}
	return nil
}
