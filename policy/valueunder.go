package policy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
)

// DefaultMaxLeaves bounds the observation sequences ValueUnder enumerates
// exactly; beyond it, it samples DefaultRollouts trajectories.
const DefaultMaxLeaves = 1 << 18

// DefaultRollouts is the number of trajectories ValueUnder samples when
// the tree is too large to enumerate: the standard error of a value on
// [0,1] is then at most 0.5/sqrt(20000) ≈ 0.0035.
const DefaultRollouts = 20000

// Rollout is the distribution of the bonus sums of a policy's
// trajectories under a model, with the policy's value: enough to price
// the bonus at any α afterwards (pessimism.Bonus.Value is
// min{α·sqrt(sum), 1}).
type Rollout struct {
	// Reward is V_{θ,R}^π, R rescaled to [0,1].
	Reward float64
	// Sums[i] is Σ_{h=0}^{H−1} ‖ψ̄(τ_h)‖²_{U_h⁻¹} of trajectory i and
	// Weights[i] its probability (exact) or 1/N (sampled).
	Sums, Weights []float64
	// Returns[i] is the expected rescaled return of sampled trajectory i
	// given its observations (sampled only; nil when exact).
	Returns []float64
	// Exact says the trajectories were enumerated.
	Exact bool
}

// Bonus is V_{θ,b̂}^π with b̂ at alpha.
func (r *Rollout) Bonus(alpha float64) float64 {
	v := 0.0
	for i, s := range r.Sums {
		v += r.Weights[i] * capped(alpha, s)
	}
	return v
}

// capped is min{α·sqrt(s), 1}, 0 when s = 0 (also for α = +Inf).
func capped(alpha, s float64) float64 {
	if s <= 0 {
		return 0
	}
	return math.Min(alpha*math.Sqrt(s), 1)
}

// LCBStdErr is the Monte Carlo standard error of Reward − Bonus(alpha)
// (0 when exact).
func (r *Rollout) LCBStdErr(alpha float64) float64 {
	n := len(r.Sums)
	if r.Exact || n < 2 {
		return 0
	}
	mean, m2 := 0.0, 0.0
	for i, s := range r.Sums {
		x := r.Returns[i] - capped(alpha, s)
		d := x - mean
		mean += d / float64(i+1)
		m2 += d * (x - mean)
	}
	return math.Sqrt(m2 / float64(n-1) / float64(n))
}

// ValueUnder values the policy pol under the model m with the bonus b's
// feature covariances (b must be built on m): it enumerates every
// observation sequence of positive probability (and, for a stochastic
// policy, every sequence of the actions it may take) when there are at
// most maxLeaves (|O|^H, times |A|^H for a stochastic policy, bounds
// them; 0 means DefaultMaxLeaves), and
// otherwise samples n trajectories of m following pol (0 means
// DefaultRollouts), seeded by seed, with the expected reward of each step
// given the belief (lower variance than the sampled reward, same mean).
// Histories outside pol's tree follow its fallback action (Cursor).
//
// Used by Select to value a policy planned on one part of the logs under
// a model fitted on another part.
func ValueUnder(ctx context.Context, m *estimate.Model, b *pessimism.Bonus, pol *Policy, maxLeaves, n int, seed uint64) (*Rollout, error) {
	if err := checkPlan(m, b); err != nil {
		return nil, err
	}
	maxLeaves, n = rolloutDefaults(maxLeaves, n)
	if Leaves(m, pol) <= float64(maxLeaves) {
		return exactRollout(m, b, pol)
	}
	e, err := newHistoryWalk(m, b, pol, true) // its codes, scale and features
	if err != nil {
		return nil, err
	}
	return e.sampledRollout(ctx, n, seed)
}

// Leaves bounds the trajectories an exact walk of pol under m enumerates:
// |O|^H observation sequences, times |A|^H action sequences for a
// stochastic policy.
func Leaves(m *estimate.Model, pol *Policy) float64 {
	n := m.ObsSequences()
	if pol.Stochastic() {
		n *= math.Pow(float64(m.NumActions), float64(m.Horizon))
	}
	return n
}

// rolloutDefaults returns maxLeaves and n, DefaultMaxLeaves and
// DefaultRollouts in place of values ≤ 0.
func rolloutDefaults(maxLeaves, n int) (int, int) {
	if maxLeaves <= 0 {
		maxLeaves = DefaultMaxLeaves
	}
	if n <= 0 {
		n = DefaultRollouts
	}
	return maxLeaves, n
}

// sampledRollout is ValueUnder's sampled case: n trajectories of the
// model following the policy, seeded by seed.
func (e *historyWalk) sampledRollout(ctx context.Context, n int, seed uint64) (*Rollout, error) {
	ts := newTrajSampler(e.m, seed, 0xc0ffee)
	feat := e.featScratch()
	r := &Rollout{Sums: make([]float64, n), Weights: make([]float64, n), Returns: make([]float64, n)}
	w := 1 / float64(n)
	for i := 0; i < n; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := e.addTrajectory(r, i, w, ts, feat); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// featScratch returns per-step feature scratch of the bonus's
// dimensions.
func (e *historyWalk) featScratch() [][]float64 {
	feat := make([][]float64, e.m.Horizon)
	for h := range feat {
		feat[h] = make([]float64, e.b.Dims[h])
	}
	return feat
}

// addTrajectory draws trajectory i (weight w) with ts, stores its bonus
// sum, weight and return in r and adds its weighted return to r.Reward.
func (e *historyWalk) addTrajectory(r *Rollout, i int, w float64, ts *trajSampler, feat [][]float64) error {
	sum, ret, err := e.sampleTrajectory(ts, feat)
	if err != nil {
		return err
	}
	r.Sums[i], r.Weights[i], r.Returns[i] = sum, w, ret
	r.Reward += w * ret
	return nil
}

// sampleTrajectory draws a trajectory of the model following the policy
// with ts and returns its bonus sum Σ and its expected rescaled return
// given its observations (feat: per-step feature scratch).
func (e *historyWalk) sampleTrajectory(ts *trajSampler, feat [][]float64) (sum, ret float64, err error) {
	m, b := e.m, e.b
	o := ts.start()
	ts.begin(o)
	st := *e.pol.NewCursor()
	sum = b.Root
	for h := 1; ; h++ {
		a, err := e.sampledAction(&st, o, ts.rng)
		if err != nil {
			return 0, 0, err
		}
		ret += (m.ExpectedReward(h, ts.bel, a) - e.shift) * e.scale
		if h == m.Horizon {
			break
		}
		sum += e.predictTerm(ts, h, a, feat[h])
		o = ts.step(h, a)
	}
	return sum, ret, nil
}

// cursorAction moves the cursor st by observation o and returns the
// model's code of the action it plays, −1 (with the action's symbol)
// when the model's vocabulary lacks it; the error is for an observation
// the policy has no action for. A stochastic policy's action is drawn
// with rng (Cursor.Draw).
func (e *historyWalk) cursorAction(st *Cursor, o int, rng *rand.Rand) (a int, sym string, err error) {
	sym, _, _, ok := st.Draw(e.c.obs[o], rng)
	if !ok {
		return -1, sym, fmt.Errorf("%w: the policy has no action for the first observation %q", ErrModel, e.c.obs[o])
	}
	a, ok = e.c.act[sym]
	if !ok {
		return -1, sym, nil
	}
	return a, sym, nil
}

// predictTerm sets ts.pred to the prediction after action a at step h
// and returns its bonus term ‖ψ̄(τ_h)‖²_{U_h⁻¹} (f: feature scratch).
func (e *historyWalk) predictTerm(ts *trajSampler, h, a int, f []float64) float64 {
	e.m.Predict(h, ts.bel, a, ts.pred)
	e.fz.Feature(h, ts.pred, a, f)
	return e.b.StepNorm2(h, f)
}

// sampledAction is cursorAction's action code (drawn with rng when the
// policy is stochastic), an error when the model does not know the
// action.
func (e *historyWalk) sampledAction(st *Cursor, o int, rng *rand.Rand) (int, error) {
	a, sym, err := e.cursorAction(st, o, rng)
	if err == nil && a < 0 {
		err = fmt.Errorf("%w: the policy's action %q is not in the model's vocabulary", ErrModel, sym)
	}
	return a, err
}

// trajSampler draws trajectories of a model: the observations, and the
// belief over the current state along the way.
type trajSampler struct {
	m               *estimate.Model
	smp             *obsSampler // nil below wideObs observations
	rng             *rand.Rand
	first, probs    []float64 // P(o_1); scratch of |O|
	bel, next, pred []float64
}

// newTrajSampler returns a sampler of m drawing from the PCG stream
// (seed, stream).
func newTrajSampler(m *estimate.Model, seed, stream uint64) *trajSampler {
	S := m.States
	ts := &trajSampler{m: m, bel: make([]float64, S), next: make([]float64, S), pred: make([]float64, S),
		probs: make([]float64, m.NumObs), first: make([]float64, m.NumObs)}
	m.FirstObsProbs(ts.first)
	if m.NumObs > wideObs {
		ts.smp = newObsSampler(m, ts.first)
	}
	ts.rng = rand.New(rand.NewPCG(seed, stream))
	return ts
}

// start draws o_1.
func (ts *trajSampler) start() int { return ts.smp.start(ts.rng, ts.first) }

// begin sets the belief to the one over s_1 after o_1 = o.
func (ts *trajSampler) begin(o int) {
	ts.m.Prior(ts.bel)
	ts.m.ObserveFirst(ts.bel, o)
}

// step draws o_{h+1} after action a from the prediction ts.pred (set by
// the caller) and moves the belief to s_{h+1}; it returns the observation.
func (ts *trajSampler) step(h, a int) int {
	o := ts.smp.next(ts.rng, ts.m, h, ts.pred, a, ts.probs)
	ts.m.Correct(h, ts.pred, a, o, ts.next)
	ts.bel, ts.next = ts.next, ts.bel
	return o
}

// obsSampler draws observations for wide alphabets (past wideObs) in
// O(r + log |O|) instead of O(r·|O|): the next state from the predicted
// distribution, then the observation from that state's emission row by
// binary search in its cumulative sums. The two stages draw o with
// probability Σ_s pred(s)·E(o|s), the distribution ObsProbs computes.
type obsSampler struct {
	m       *estimate.Model
	cum     map[*float64][]float64 // per emission table: row-wise cumulative sums (S×|O|)
	firstCD []float64              // cumulative P(o_1)
}

func newObsSampler(m *estimate.Model, first []float64) *obsSampler {
	smp := &obsSampler{m: m, cum: map[*float64][]float64{}, firstCD: cumulative(first)}
	for h := 1; h <= m.Horizon; h++ {
		for a := 0; a < m.NumActions; a++ {
			smp.addTable(m.EmitOf(m.Table(h), a))
		}
	}
	return smp
}

// addTable adds the row-wise cumulative sums of the emission table e,
// unless it has them.
func (smp *obsSampler) addTable(e []float64) {
	if smp.cum[&e[0]] != nil {
		return
	}
	S, O := smp.m.States, smp.m.NumObs
	c := make([]float64, S*O)
	for s := 0; s < S; s++ {
		copy(c[s*O:(s+1)*O], cumulative(e[s*O:(s+1)*O]))
	}
	smp.cum[&e[0]] = c
}

// cumulative returns the running sums of p.
func cumulative(p []float64) []float64 {
	c := make([]float64, len(p))
	t := 0.0
	for i, x := range p {
		t += max(x, 0)
		c[i] = t
	}
	return c
}

// search returns the first index whose running sum exceeds u times the
// total (an index of positive probability when the total is positive).
func search(c []float64, u float64) int {
	x := u * c[len(c)-1]
	i := sort.Search(len(c), func(i int) bool { return c[i] > x })
	return min(i, len(c)-1)
}

func (smp *obsSampler) first(rng *rand.Rand) int { return search(smp.firstCD, rng.Float64()) }

func (smp *obsSampler) draw(rng *rand.Rand, h int, pred []float64, a int) int {
	m := smp.m
	e := m.EmitOf(m.Table(h), a)
	s := draw(rng, pred)
	O := m.NumObs
	return search(smp.cum[&e[0]][s*O:(s+1)*O], rng.Float64())
}

// start draws o_1: by the sampler on wide vocabularies (smp not nil),
// otherwise from first, the model's P(o_1).
func (smp *obsSampler) start(rng *rand.Rand, first []float64) int {
	if smp != nil {
		return smp.first(rng)
	}
	return draw(rng, first)
}

// next draws o_{h+1} given the predicted state pred and the action a:
// by the sampler on wide vocabularies (smp not nil), otherwise from the
// model's observation probabilities (probs is scratch of |O|).
func (smp *obsSampler) next(rng *rand.Rand, m *estimate.Model, h int, pred []float64, a int, probs []float64) int {
	if smp != nil {
		return smp.draw(rng, h, pred, a)
	}
	m.ObsProbs(h, pred, a, probs)
	return draw(rng, probs)
}

// draw samples an index from the distribution p (sums to 1 up to
// rounding; the last positive index takes the remainder).
func draw(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	last := 0
	for i, x := range p {
		if x <= 0 {
			continue
		}
		last = i
		if u < x {
			return i
		}
		u -= x
	}
	return last
}

// exactRollout enumerates the trajectories of pol under m (the walk of
// ModelValue, keeping every leaf).
func exactRollout(m *estimate.Model, b *pessimism.Bonus, pol *Policy) (*Rollout, error) {
	w, err := newHistoryWalk(m, b, pol, true)
	if err != nil {
		return nil, err
	}
	r := &Rollout{Exact: true}
	w.leaf = func(sum, prob float64) {
		r.Sums = append(r.Sums, sum)
		r.Weights = append(r.Weights, prob)
	}
	if r.Reward, _, _, err = w.run(context.Background(), nil); err != nil {
		return nil, err
	}
	return r, nil
}
