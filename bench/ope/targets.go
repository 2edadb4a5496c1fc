package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/categorical"
	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// target is an evaluated policy of the study with its exact value.
type target struct {
	name  string
	value float64 // V^π under the true model
	// Exactly one of tree, opt and stoch is set.
	tree  *policy.Policy
	opt   pomdp.PolicyFunc
	stoch pomdp.StochasticPolicy
}

// Target names of the study.
const (
	targetOptimal = "optimal" // the exact optimal policy
	targetClone   = "clone"   // behaviour cloning on a log the study never scores
	targetRandom  = "random"  // a random stochastic policy of (step, observation)
)

// cloneEpisodes is the size of the separate log the clone is trained on.
const cloneEpisodes = 1000

// makeTarget builds the named target for (m, H, behaviour) and values it
// exactly (maxNodes bounds the exact recursions).
func makeTarget(ctx context.Context, name string, m *pomdp.POMDP, H int, beh pomdp.Behavior, maxNodes int) (*target, error) {
	switch name {
	case targetOptimal:
		v, pol, err := pomdp.OptimalWithin(ctx, m, H, maxNodes)
		if err != nil {
			return nil, err
		}
		return &target{name: name, value: v, opt: pol}, nil
	case targetClone:
		return cloneTarget(ctx, m, H, beh, maxNodes)
	case targetRandom:
		return randomTarget(ctx, m, H, maxNodes)
	}
	return nil, fmt.Errorf("unknown target %q (optimal, clone or random)", name)
}

// cloneTarget is behaviour cloning trained on a separate log of
// cloneEpisodes episodes of beh, valued exactly.
func cloneTarget(ctx context.Context, m *pomdp.POMDP, H int, beh pomdp.Behavior, maxNodes int) (*target, error) {
	// Seed 0 is never a scored log's seed (those are 1..N).
	d, err := pomdp.SimulateDataset(ctx, m, H, cloneEpisodes, beh, 0)
	if err != nil {
		return nil, err
	}
	pol, err := baseline.BehaviorCloning(ctx, d, baseline.CloneOptions{AllFirst: true})
	if err != nil {
		return nil, err
	}
	v, err := pomdp.EvaluatePolicyWithin(ctx, m, H, pol, maxNodes)
	if err != nil {
		return nil, err
	}
	return &target{name: targetClone, value: v, tree: pol}, nil
}

// randomTarget is a random stochastic policy of (step, observation),
// valued exactly.
func randomTarget(ctx context.Context, m *pomdp.POMDP, H int, maxNodes int) (*target, error) {
	nA, nO := m.NumActions(), m.NumObs()+1
	table := randomTable(H, nO, nA)
	pol := func(h, o int, _ []float64, p []float64) {
		copy(p, table[((h-1)*nO+o+1)*nA:])
	}
	v, err := pomdp.StochasticValueWithin(ctx, m, H, pol, maxNodes)
	if err != nil {
		return nil, err
	}
	return &target{name: targetRandom, value: v, stoch: pol}, nil
}

// randomTable draws one Dirichlet(1, …, 1) distribution over the nA
// actions per (step, observation), once per problem and horizon: H·nO
// rows of nA probabilities.
func randomTable(H, nO, nA int) []float64 {
	rng := rand.New(rand.NewPCG(uint64(H), 0x0be))
	table := make([]float64, H*nO*nA)
	for i := 0; i < len(table); i += nA {
		categorical.Dirichlet1(rng, table[i:i+nA])
	}
	return table
}

// opeTarget is the target as package ope's Target over the logs d.
func (t *target) opeTarget(m *pomdp.POMDP, d *ingest.Dataset, f *pomdp.Filter) (ope.Target, error) {
	if t.tree != nil {
		return ope.NewTreeTarget(t.tree, d)
	}
	st := &simTarget{t: t, m: m, f: f}
	st.mapActions(m, d)
	if err := st.mapObs(m, d); err != nil {
		return nil, err
	}
	return st, nil
}

// mapActions maps the logged action codes to the model's actions and
// back.
func (st *simTarget) mapActions(m *pomdp.POMDP, d *ingest.Dataset) {
	act := indices(map[string]int{}, m.Actions)
	st.actOf = make([]int, len(d.ActVocab))
	st.codeOf = make([]int, m.NumActions())
	for i := range st.codeOf {
		st.codeOf[i] = -1
	}
	for c, a := range d.ActVocab {
		st.actOf[c] = act[a]
		st.codeOf[act[a]] = c
	}
}

// mapObs maps the logged observation codes to the model's observations;
// every logged observation must be the model's.
func (st *simTarget) mapObs(m *pomdp.POMDP, d *ingest.Dataset) error {
	obs := indices(map[string]int{pomdp.InitSymbol: pomdp.ObsInit}, m.Observations)
	st.obsOf = make([]int, len(d.ObsVocab))
	for c, o := range d.ObsVocab {
		i, ok := obs[o]
		if !ok {
			return fmt.Errorf("logged observation %q is not the model's", o)
		}
		st.obsOf[c] = i
	}
	return nil
}

// indices adds to idx the index of each of names, and returns it.
func indices(idx map[string]int, names []string) map[string]int {
	for i, n := range names {
		idx[n] = i
	}
	return idx
}

// simTarget follows a target given on the true model's beliefs.
type simTarget struct {
	t            *target
	m            *pomdp.POMDP
	f            *pomdp.Filter
	actOf, obsOf []int // log code → model index
	codeOf       []int // model action → log code (−1: never logged)
}

func (s *simTarget) Deterministic() bool { return s.t.opt != nil }

func (s *simTarget) Follow() ope.Follower {
	return &simFollower{s: s, f: s.f.Clone(), p: make([]float64, s.m.NumActions())}
}

type simFollower struct {
	s        *simTarget
	f        *pomdp.Filter
	b        []float64
	obs, act []int // model indices of the history so far
	p        []float64
	dead     bool      // the history is impossible under the true model
	keep     []float64 // scratch
}

func (f *simFollower) Clone() ope.Follower {
	return &simFollower{s: f.s, f: f.f.Clone(), b: append([]float64(nil), f.b...),
		obs: append([]int(nil), f.obs...), act: append([]int(nil), f.act...), p: make([]float64, len(f.p)), dead: f.dead}
}

func (f *simFollower) Next(prevAct, obs int, p []float64) error {
	o := f.s.obsOf[obs]
	if prevAct < 0 {
		f.b, f.obs, f.act, f.dead = f.f.Start(), f.obs[:0], f.act[:0], false
	} else {
		f.advance(f.s.actOf[prevAct], o)
	}
	f.obs = append(f.obs, o)
	f.decide(o)
	return f.toLog(p)
}

// advance updates the belief with model action a and observation o.
//
// The model-based estimators look ahead through histories their fitted
// model imagines, some impossible under the true model (the first
// observation again, say): the target still answers there, from the last
// possible belief (the optimal policy: action 0).
func (f *simFollower) advance(a, o int) {
	if o == pomdp.ObsInit || f.dead {
		f.dead = true
	} else {
		keep := append(f.keep[:0], f.b...)
		if !f.f.Update(f.b, a, o) {
			f.dead = true
			copy(f.b, keep)
		}
		f.keep = keep
	}
	f.act = append(f.act, a)
}

// decide sets f.p to the target's distribution over the model's actions
// after the history so far, o the last observation.
func (f *simFollower) decide(o int) {
	clear(f.p)
	if f.s.t.opt != nil {
		f.p[f.s.t.opt(f.obs, f.act)] = 1
	} else {
		f.s.t.stoch(len(f.obs), o, f.b, f.p)
	}
}

// toLog writes f.p into p over the logged action codes; errUnlogged when
// the target gives probability to an action the log never took.
func (f *simFollower) toLog(p []float64) error {
	clear(p)
	for a, q := range f.p {
		if q == 0 {
			continue
		}
		c := f.s.codeOf[a]
		if c < 0 {
			return errUnlogged
		}
		p[c] = q
	}
	return nil
}

// errUnlogged: the target gives probability to an action the log never
// took (possible for tiny logs under narrow behaviour); the seed is
// recorded as skipped.
var errUnlogged = fmt.Errorf("the target takes an action the log never took")
