package policy_test

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// openLoopMix is the stochastic policy that draws action a with
// probability q[a] at step 1, whatever the observation, and plays it to
// the end (its rows have no children; the fallback is the action).
func openLoopMix(m *estimate.Model, q []float64) *policy.Policy {
	pol := &policy.Policy{Horizon: m.Horizon}
	for _, o := range m.ObsVocab {
		for a, sym := range m.ActVocab {
			pol.Nodes = append(pol.Nodes, policy.Node{ID: int64(len(pol.Nodes)), Parent: -1, Step: 1, Obs: o, Action: sym, Fallback: sym})
			pol.Probs = append(pol.Probs, q[a])
		}
	}
	return pol
}

// openLoop is the deterministic policy that plays action a throughout.
func openLoop(m *estimate.Model, a int) *policy.Policy {
	pol := &policy.Policy{Horizon: m.Horizon}
	for o, name := range m.ObsVocab {
		pol.Nodes = append(pol.Nodes, policy.Node{ID: int64(o), Parent: -1, Step: 1, Obs: name, Action: m.ActVocab[a], Fallback: m.ActVocab[a]})
	}
	return pol
}

// TestStochasticModelValue: a policy that draws its open-loop action at
// step 1 is worth, under the model, the mix of the open-loop policies'
// values, for the reward, the bonus at any α (each trajectory keeps its
// own Σ) and ModelReturn; the sampled values agree within four standard
// errors.
func TestStochasticModelValue(t *testing.T) {
	ctx := context.Background()
	m, b := setup(t, 61, pessimismtest.Spec{States: 3, Obs: 2, Actions: 3, Horizon: 3}, 40)
	q := []float64{0.5, 0.3, 0.2}
	mix := openLoopMix(m, q)
	var wantRet, wantRew float64
	wantBon := map[float64]float64{}
	alphas := []float64{0.3, 1, 4}
	for a := range m.NumActions {
		pol := openLoop(m, a)
		v, _, err := policy.ModelReturn(ctx, m, pol)
		if err != nil {
			t.Fatal(err)
		}
		wantRet += q[a] * v
		r, err := policy.ValueUnder(ctx, m, b, pol, 0, 0, 1)
		if err != nil || !r.Exact {
			t.Fatal(err, r.Exact)
		}
		wantRew += q[a] * r.Reward
		for _, al := range alphas {
			wantBon[al] += q[a] * r.Bonus(al)
		}
	}
	got, _, err := policy.ModelReturn(ctx, m, mix)
	if err != nil || math.Abs(got-wantRet) > 1e-9 {
		t.Errorf("ModelReturn %v (%v), want %v", got, err, wantRet)
	}
	r, err := policy.ValueUnder(ctx, m, b, mix, 0, 0, 1)
	if err != nil || !r.Exact || math.Abs(r.Reward-wantRew) > 1e-9 {
		t.Fatalf("ValueUnder reward %v (exact %v, %v), want %v", r.Reward, r.Exact, err, wantRew)
	}
	for _, al := range alphas {
		if got := r.Bonus(al); math.Abs(got-wantBon[al]) > 1e-9 {
			t.Errorf("α = %v: bonus %v, want %v", al, got, wantBon[al])
		}
	}
	// Sampled: ValueUnder with a leaf budget of 1, and ModelReturnSampled.
	s, err := policy.ValueUnder(ctx, m, b, mix, 1, 40000, 3)
	if err != nil || s.Exact {
		t.Fatal(err, s.Exact)
	}
	if se := s.LCBStdErr(0); math.Abs(s.Reward-wantRew) > 4*se {
		t.Errorf("sampled reward %v ± %v, exact %v", s.Reward, se, wantRew)
	}
	v, se, _, err := policy.ModelReturnSampled(ctx, m, mix, 40000, 5)
	if err != nil || math.Abs(v-wantRet) > 4*se {
		t.Errorf("ModelReturnSampled %v ± %v (%v), exact %v", v, se, err, wantRet)
	}
}

// TestStochasticModelValueDeep: a policy that mixes at both steps of a
// two-step model, its second-step mix depending on the first action,
// valued exactly by the walk and by sampling, which must agree.
func TestStochasticModelValueDeep(t *testing.T) {
	ctx := context.Background()
	m, _ := setup(t, 62, pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 2}, 40)
	pol := &policy.Policy{Horizon: 2}
	add := func(parent int64, step int32, obs, act string, q float64) int64 {
		id := int64(len(pol.Nodes))
		pol.Nodes = append(pol.Nodes, policy.Node{ID: id, Parent: parent, Step: step, Obs: obs, Action: act, Fallback: m.ActVocab[0]})
		pol.Probs = append(pol.Probs, q)
		return id
	}
	for i, o := range m.ObsVocab {
		p0 := 0.2 + 0.5*float64(i)
		r0 := add(-1, 1, o, m.ActVocab[0], p0)
		r1 := add(-1, 1, o, m.ActVocab[1], 1-p0)
		for j, o2 := range m.ObsVocab {
			add(r0, 2, o2, m.ActVocab[j], 1) // after action 0: action j on o2
			q := 0.1 + 0.3*float64(j)
			add(r1, 2, o2, m.ActVocab[0], q)
			add(r1, 2, o2, m.ActVocab[1], 1-q)
		}
	}
	exact, _, err := policy.ModelReturn(ctx, m, pol)
	if err != nil {
		t.Fatal(err)
	}
	v, se, _, err := policy.ModelReturnSampled(ctx, m, pol, 80000, 9)
	if err != nil || math.Abs(v-exact) > 4*se {
		t.Errorf("sampled %v ± %v (%v), exact %v", v, se, err, exact)
	}
	// By hand over the policy's four action sequences per observation path.
	want := 0.0
	first := make([]float64, m.NumObs)
	m.FirstObsProbs(first)
	for o, po := range first {
		for a := range 2 {
			p0 := 0.2 + 0.5*float64(o)
			pa := []float64{p0, 1 - p0}[a]
			bel := make([]float64, m.States)
			m.Prior(bel)
			m.ObserveFirst(bel, o)
			r1 := m.ExpectedReward(1, bel, a)
			pred, probs := make([]float64, m.States), make([]float64, m.NumObs)
			m.Predict(1, bel, a, pred)
			m.ObsProbs(1, pred, a, probs)
			for o2, p2 := range probs {
				b2 := make([]float64, m.States)
				m.Correct(1, pred, a, o2, b2)
				var r2 float64
				if a == 0 {
					r2 = m.ExpectedReward(2, b2, o2)
				} else {
					q := 0.1 + 0.3*float64(o2)
					r2 = q*m.ExpectedReward(2, b2, 0) + (1-q)*m.ExpectedReward(2, b2, 1)
				}
				want += po * pa * p2 * (r1 + r2)
			}
		}
	}
	if math.Abs(exact-want) > 1e-9 {
		t.Errorf("ModelReturn %v, by hand %v", exact, want)
	}
}
