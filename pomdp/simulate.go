package pomdp

import (
	"context"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/policy"

	"math/rand/v2"
)

// Logs are simulated episodes in memory, row-major: episode k (0-based),
// step h (1-based) at index k·Horizon + h − 1. They carry the true
// propensities π^b(a_h | τ_{h−1}, o_h).
type Logs struct {
	Model    *POMDP
	Horizon  int
	Behavior string // the behaviour's specification
	Seed     uint64

	Obs        []int32 // o_h as an observation index, ObsInit at h = 1
	Act        []int32 // a_h
	Reward     []float64
	Propensity []float64
}

// NumEpisodes is K.
func (l *Logs) NumEpisodes() int {
	if l.Horizon == 0 {
		return 0
	}
	return len(l.Obs) / l.Horizon
}

// EpisodeID is the episode_id written for episode k: k+1.
func (l *Logs) EpisodeID(k int) int64 { return int64(k) + 1 }

// Return is the undiscounted return r_1+…+r_H of episode k.
func (l *Logs) Return(k int) float64 {
	s := 0.0
	for _, r := range l.Reward[k*l.Horizon : (k+1)*l.Horizon] {
		s += r
	}
	return s
}

// chunkEpisodes is the number of episodes simulated from one random
// stream. Streams are tied to chunks, not to workers, so the logs do not
// depend on the number of workers; 1024 episodes keep the per-chunk set-up
// negligible while leaving enough chunks to share among cores.
const chunkEpisodes = 1024

// Simulate draws K episodes of H steps from m under the behaviour b, with
// the timing of the package documentation, and records the true
// propensities. The same seed gives the same logs whatever the number of
// CPUs. It stops with ctx.Err() when ctx is cancelled.
func Simulate(ctx context.Context, m *POMDP, H, K int, b Behavior, seed uint64) (*Logs, error) {
	return simulate(ctx, m, H, K, b, seed, 0)
}

func simulate(ctx context.Context, m *POMDP, H, K int, b Behavior, seed uint64, workers int) (*Logs, error) {
	mm, err := prepareSimulate(m, H, K, b)
	if err != nil {
		return nil, err
	}
	l := newLogs(m, H, K, b, seed)
	if err := newSampler(mm).simulateAll(ctx, l, b, workers); err != nil {
		return nil, err
	}
	return l, nil
}

// prepareSimulate prepares m for a simulation of K episodes of H steps
// under b, after checking them.
func prepareSimulate(m *POMDP, H, K int, b Behavior) (*model, error) {
	mm, err := prepare(m)
	if err != nil {
		return nil, err
	}
	if err := checkSimulate(H, K, b); err != nil {
		return nil, err
	}
	return mm, nil
}

// simulateAll simulates every episode of the logs l under b, chunk by chunk,
// each chunk from its own random stream, on up to workers goroutines.
func (sm *sampler) simulateAll(ctx context.Context, l *Logs, b Behavior, workers int) error {
	K := l.NumEpisodes()
	chunks := (K + chunkEpisodes - 1) / chunkEpisodes
	return parallel.For(ctx, chunks, workers, func(c int) error {
		lo := c * chunkEpisodes
		hi := min(K, lo+chunkEpisodes)
		return sm.chunk(l, b, lo, hi, chunkRand(l.Seed, c))
	})
}

// newLogs are empty logs of K episodes of H steps of m under b.
func newLogs(m *POMDP, H, K int, b Behavior, seed uint64) *Logs {
	n := H * K
	return &Logs{
		Model: m, Horizon: H, Behavior: b.String(), Seed: seed,
		Obs: make([]int32, n), Act: make([]int32, n),
		Reward: make([]float64, n), Propensity: make([]float64, n),
	}
}

// checkSimulate checks the horizon H, the number of episodes K and the
// behaviour b of a simulation.
func checkSimulate(H, K int, b Behavior) error {
	if H <= 0 || K <= 0 {
		return fmt.Errorf("%w: horizon %d and episodes %d must be positive", ErrBehavior, H, K)
	}
	if b == nil {
		return fmt.Errorf("%w: nil behaviour", ErrBehavior)
	}
	if float64(H)*float64(K) > math.MaxInt32 {
		return fmt.Errorf("%w: %d episodes × %d steps is too many rows for one simulation", ErrBehavior, K, H)
	}
	return nil
}

// splitmix64 scrambles a counter into a well-spread 64-bit seed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// chunkRand is the random stream of chunk c.
func chunkRand(seed uint64, c int) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix64(seed), splitmix64(seed^splitmix64(uint64(c)+1))))
}

// sampler holds cumulative distributions for inverse-CDF sampling.
type sampler struct {
	mm    *model
	start []float64
	tCDF  [][][]float64 // [a][s]
	oCDF  [][][]float64 // [a][s']
}

func newSampler(mm *model) *sampler {
	sm := &sampler{mm: mm, start: cdf(mm.Start)}
	sm.tCDF = make([][][]float64, mm.nA)
	sm.oCDF = make([][][]float64, mm.nA)
	for a := range mm.nA {
		sm.actionCDFs(a)
	}
	return sm
}

// actionCDFs sets the cumulative transition and observation distributions
// of action a from every state.
func (sm *sampler) actionCDFs(a int) {
	mm := sm.mm
	sm.tCDF[a] = make([][]float64, mm.nS)
	sm.oCDF[a] = make([][]float64, mm.nS)
	for s := range mm.nS {
		sm.tCDF[a][s] = cdf(mm.T[a][s])
		sm.oCDF[a][s] = cdf(mm.O[a][s])
	}
}

// cdf is the cumulative distribution of p, set to exactly 1 from the last
// positive entry on, so rounding never selects a zero-probability entry.
func cdf(p []float64) []float64 {
	c := make([]float64, len(p))
	sum, last := 0.0, 0
	for i, v := range p {
		sum += v
		c[i] = sum
		if v > 0 {
			last = i
		}
	}
	for i := last; i < len(c); i++ {
		c[i] = 1
	}
	return c
}

// draw is the first index whose cumulative probability exceeds u ∈ [0,1).
func draw(c []float64, u float64) int {
	lo, hi := 0, len(c)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if c[mid] > u {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// drawProbs draws from a probability vector that need not be cumulative.
func drawProbs(p []float64, u float64) int {
	sum, last := 0.0, -1
	for i, v := range p {
		if v <= 0 {
			continue
		}
		sum += v
		last = i
		if u < sum {
			return i
		}
	}
	return last
}

// chunk simulates episodes lo..hi−1 of the logs l under the behaviour b
// from the random stream rng.
func (sm *sampler) chunk(l *Logs, b Behavior, lo, hi int, rng *rand.Rand) error {
	S := sm.mm.nS
	e := &episodeSim{sampler: sm, l: l, b: b, rng: rng, useBelief: b.UsesBelief(),
		belief: make([]float64, S), pred: make([]float64, S), probs: make([]float64, sm.mm.nA)}
	for k := lo; k < hi; k++ {
		if err := e.episode(k); err != nil {
			return err
		}
	}
	return nil
}

// episodeSim simulates episodes of the logs l under the behaviour b from
// the random stream rng, filtering the true belief when b uses it; pred
// and probs are buffers.
type episodeSim struct {
	*sampler
	l                   *Logs
	b                   Behavior
	rng                 *rand.Rand
	useBelief           bool
	belief, pred, probs []float64
}

// episode draws episode k and records its steps in the logs.
func (e *episodeSim) episode(k int) error {
	s := draw(e.start, e.rng.Float64())
	copy(e.belief, e.mm.Start)
	o := ObsInit
	for h := 1; h <= e.l.Horizon; h++ {
		var err error
		if s, o, err = e.step(k, h, s, o); err != nil {
			return err
		}
	}
	return nil
}

// step draws step h of episode k from the state s after the observation
// o, records it and filters the belief; it returns the next state and
// observation.
func (e *episodeSim) step(k, h, s, o int) (int, int, error) {
	H := e.l.Horizon
	a, err := e.action(h)
	if err != nil {
		return 0, 0, err
	}
	s2 := draw(e.tCDF[a][s], e.rng.Float64())
	o2 := draw(e.oCDF[a][s2], e.rng.Float64())
	e.record(k*H+h-1, o, a, s, s2, o2)
	if e.useBelief && h < H {
		e.filter(a, o2)
	}
	return s2, o2, nil
}

// action draws the action of step h from the behaviour's probabilities,
// which it leaves in e.probs.
func (e *episodeSim) action(h int) (int, error) {
	e.b.Probs(h, e.belief, e.probs)
	a := drawProbs(e.probs, e.rng.Float64())
	if a < 0 {
		return 0, fmt.Errorf("%w: %s gives no action a positive probability at step %d", ErrBehavior, e.b, h)
	}
	return a, nil
}

// filter updates the true belief with the action a and the observation o.
func (e *episodeSim) filter(a, o int) {
	e.mm.predict(e.belief, a, e.pred)
	e.mm.update(e.pred, a, o, e.belief)
}

// record writes row i of the logs: the observation o, the action a and
// its propensity, and the reward of the move from s to s2 emitting o2.
func (e *episodeSim) record(i, o, a, s, s2, o2 int) {
	mm, l := e.mm, e.l
	S, O := mm.nS, mm.nO
	l.Obs[i] = int32(o)
	l.Act[i] = int32(a)
	l.Reward[i] = mm.Reward[((a*S+s)*S+s2)*O+o2]
	l.Propensity[i] = e.probs[a]
}

// SimulatePolicy estimates the value under m of a policy read from
// policy.arrow (followed with policy.Cursor, so a run's controller
// decides the histories past its table) by n episodes of H steps, for
// policies whose histories are too many to enumerate (EvaluatePolicy).
// Each step adds the expected immediate reward of its state and action,
// E[r | s, a] (the same mean as the drawn reward, less variance). It
// returns the mean return and its standard error; the same seed gives the
// same figures whatever the number of CPUs. A stochastic policy
// (Policy.Probs) draws its actions (policy.Cursor.Sample) from the same
// random stream as the states and observations.
func SimulatePolicy(ctx context.Context, m *POMDP, H int, p *policy.Policy, n int, seed uint64) (mean, se float64, err error) {
	return simulatePolicy(ctx, m, H, p, n, seed, 0)
}

// simulatePolicy is SimulatePolicy on up to workers goroutines (0: one
// per CPU).
func simulatePolicy(ctx context.Context, m *POMDP, H int, p *policy.Policy, n int, seed uint64, workers int) (mean, se float64, err error) {
	mm, err := prepare(m)
	if err != nil {
		return 0, 0, err
	}
	if p == nil || H <= 0 || n <= 1 {
		return 0, 0, fmt.Errorf("%w: a policy, a positive horizon (%d) and at least 2 episodes (%d) are needed", ErrPolicy, H, n)
	}
	ps := &policySim{sampler: newSampler(mm), p: p, H: H, actIdx: actionIndex(m)}
	sums, err := ps.chunkSums(ctx, n, seed, workers)
	if err != nil {
		return 0, 0, err
	}
	mean, se = meanSE(sums, n)
	return mean, se, nil
}

// chunkSums simulates n episodes chunk by chunk on up to workers
// goroutines, each chunk from its own random stream of seed, and returns
// each chunk's sums of the returns and of their squares.
func (ps *policySim) chunkSums(ctx context.Context, n int, seed uint64, workers int) ([][2]float64, error) {
	chunks := (n + chunkEpisodes - 1) / chunkEpisodes
	sums := make([][2]float64, chunks)
	err := parallel.For(ctx, chunks, workers, func(c int) error {
		rng := chunkRand(seed, c)
		lo, hi := c*chunkEpisodes, min(n, (c+1)*chunkEpisodes)
		return ps.chunk(rng, lo, hi, &sums[c])
	})
	return sums, err
}

// actionIndex maps the action names of m to their indices.
func actionIndex(m *POMDP) map[string]int {
	actIdx := make(map[string]int, len(m.Actions))
	for i, name := range m.Actions {
		actIdx[name] = i
	}
	return actIdx
}

// policySim simulates episodes of H steps of the policy p; actIdx maps
// the model's action names to their indices.
type policySim struct {
	*sampler
	p      *policy.Policy
	H      int
	actIdx map[string]int
}

// chunk simulates episodes lo..hi−1 from rng and adds their returns and
// squared returns to sum.
func (ps *policySim) chunk(rng *rand.Rand, lo, hi int, sum *[2]float64) error {
	for k := lo; k < hi; k++ {
		ret, err := ps.episode(rng)
		if err != nil {
			return err
		}
		sum[0] += ret
		sum[1] += ret * ret
	}
	return nil
}

// episode simulates one episode from rng and returns the sum of the
// expected immediate rewards of its states and actions.
func (ps *policySim) episode(rng *rand.Rand) (float64, error) {
	mm := ps.mm
	cur := ps.p.NewCursor()
	s, o, ret := draw(ps.start, rng.Float64()), ObsInit, 0.0
	for h := 1; h <= ps.H; h++ {
		a, err := ps.action(rng, cur, h, o)
		if err != nil {
			return 0, err
		}
		ret += mm.er[a*mm.nS+s]
		s2 := draw(ps.tCDF[a][s], rng.Float64())
		o = draw(ps.oCDF[a][s2], rng.Float64())
		s = s2
	}
	return ret, nil
}

// action is the index of the action that the policy's cursor cur takes at
// step h after the observation o.
func (ps *policySim) action(rng *rand.Rand, cur *policy.Cursor, h, o int) (int, error) {
	m := ps.mm.POMDP
	name, node, _, ok := cur.Draw(m.ObsName(o), rng)
	if !ok {
		return 0, noInitRow()
	}
	a, known := ps.actIdx[name]
	if !known {
		return 0, fmt.Errorf("%w: action %q at step %d (%s) is not an action of %s", ErrPolicy, name, h, nodeWhere(node), m.Name)
	}
	return a, nil
}

// meanSE is the mean of n returns and its standard error from the
// chunks' sums of the returns and of their squares.
func meanSE(sums [][2]float64, n int) (mean, se float64) {
	var tot, sq float64
	for _, x := range sums {
		tot += x[0]
		sq += x[1]
	}
	mean = tot / float64(n)
	v := max(sq/float64(n)-mean*mean, 0) * float64(n) / float64(n-1)
	return mean, math.Sqrt(v / float64(n))
}
