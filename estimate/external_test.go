package estimate

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
)

// blockStepper is an EStepper that does what a data-parallel engine does:
// cuts the episodes into blocks of size episodes, runs EStep.Block on each,
// sends every block's statistics through MarshalBinary/UnmarshalBinary and
// adds them in reverse block order (an engine adds in any order).
type blockStepper struct {
	size  int
	mu    sync.Mutex // Fit's restarts call EStep concurrently
	calls int
	sets  map[*ingest.Dataset]bool
}

func (b *blockStepper) EStep(_ context.Context, m *Model, d *ingest.Dataset) (*Stats, error) {
	b.mu.Lock()
	b.calls++
	b.sets[d] = true
	b.mu.Unlock()
	e := NewEStep(m)
	total := e.NewStats()
	H, K := d.Horizon, d.NumEpisodes()
	for k1 := K; k1 > 0; k1 -= b.size {
		k0 := max(0, k1-b.size)
		st := e.NewStats()
		blk := Block{Horizon: H, Obs: d.Obs[k0*H : k1*H], Act: d.Act[k0*H : k1*H], Reward: d.Reward[k0*H : k1*H], FirstOffset: k0}
		if err := e.Block(blk, st); err != nil {
			return nil, err
		}
		raw, err := st.MarshalBinary()
		if err != nil {
			return nil, err
		}
		var back Stats
		if err := back.UnmarshalBinary(raw); err != nil {
			return nil, err
		}
		if err := total.Add(&back); err != nil {
			return nil, err
		}
	}
	return total, nil
}

// TestEStepperMatchesFit: Fit whose E-steps run block by block through the
// exported API (statistics serialised and added in reverse order) ends at
// the model of the in-process Fit within 1e-9 in every parameter, for
// categorical and Gaussian rewards, with the rank chosen on held-out
// episodes (so the training and held-out subsets go through the EStepper
// too).
func TestEStepperMatchesFit(t *testing.T) {
	for i, mc := range smallCases[:4] {
		t.Run(mc.name, func(t *testing.T) {
			m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, uint64(40+i))
			d := sampleDataset(m, 700, uint64(50+i))
			dyn := DynamicsStationary
			if !mc.stationary {
				dyn = DynamicsPerStep
			}
			o := Options{MaxRank: 2, Dynamics: dyn, Restarts: 2, MaxIter: 40, Seed: 3}
			want, err := Fit(context.Background(), d, o)
			if err != nil {
				t.Fatal(err)
			}
			bs := &blockStepper{size: 37, sets: map[*ingest.Dataset]bool{}}
			o.EStepper = bs
			got, err := Fit(context.Background(), d, o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := want.Model.MaxParamDiff(got.Model); diff > 1e-9 {
				t.Errorf("models differ by %g", diff)
			}
			if math.Abs(want.LogLik-got.LogLik) > 1e-9*math.Abs(want.LogLik) {
				t.Errorf("log-likelihood %v, want %v", got.LogLik, want.LogLik)
			}
			if len(bs.sets) < 3 || bs.calls < len(want.Trace) {
				t.Errorf("%d E-steps on %d episode sets; want ≥ %d on ≥ 3 (train, held-out blocks, all)", bs.calls, len(bs.sets), len(want.Trace))
			}
			if got.Options.EStepper != nil {
				t.Error("Result.Options keeps the EStepper")
			}
		})
	}
}

// TestEStepBlockErrors: data a model cannot score are errors naming the
// episode (its index in the dataset) and the step, never a panic.
func TestEStepBlockErrors(t *testing.T) {
	m := randomModel(2, 3, 2, 3, true, []float64{0, 1}, 7)
	e := NewEStep(m)
	good := Block{Horizon: 3, Obs: []uint16{0, 1, 2}, Act: []uint16{0, 1, 0}, Reward: []float64{0, 1, 0}, FirstOffset: 10}
	if err := e.Block(good, e.NewStats()); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(b *Block){
		"episode 10 step 2: code out of vocabulary": func(b *Block) { b.Obs[1] = 3 },
		"episode 10 step 3: reward 0.5 outside":     func(b *Block) { b.Reward[2] = 0.5 },
		"episode 10 step 1: reward NaN":             func(b *Block) { b.Reward[0] = math.NaN() },
		"does not hold episodes of 3 steps":         func(b *Block) { b.Obs = b.Obs[:2] },
	}
	for want, mod := range cases {
		b := good
		b.Obs, b.Reward = append([]uint16(nil), good.Obs...), append([]float64(nil), good.Reward...)
		mod(&b)
		err := e.Block(b, e.NewStats())
		if !errors.Is(err, ErrData) || !contains(err.Error(), want) {
			t.Errorf("got %v, want ErrData with %q", err, want)
		}
	}
	other := NewEStep(randomModel(3, 3, 2, 3, true, []float64{0, 1}, 7))
	if err := e.Block(good, other.NewStats()); !errors.Is(err, ErrData) {
		t.Errorf("statistics of another shape: got %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestStatsBinary: the binary form round-trips bit for bit, and truncated
// or altered bytes are an error.
func TestStatsBinary(t *testing.T) {
	for i, mc := range smallCases[:4] {
		m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, uint64(60+i))
		d := sampleDataset(m, 30, uint64(70+i))
		e := NewEStep(m)
		st := e.NewStats()
		H := d.Horizon
		if err := e.Block(Block{Horizon: H, Obs: d.Obs, Act: d.Act, Reward: d.Reward}, st); err != nil {
			t.Fatal(err)
		}
		want := e.k.m.DataLogLik(d)
		if math.Abs(st.LogLik()-want) > 1e-12*math.Abs(want) {
			t.Errorf("%s: block log-likelihood %v, DataLogLik %v", mc.name, st.LogLik(), want)
		}
		raw, _ := st.MarshalBinary()
		var back Stats
		if err := back.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		raw2, _ := back.MarshalBinary()
		if string(raw) != string(raw2) {
			t.Errorf("%s: round trip changed the bytes", mc.name)
		}
		for _, bad := range [][]byte{raw[:len(raw)-1], raw[:20], append(append([]byte(nil), raw...), 0), {1, 2, 3}} {
			if err := new(Stats).UnmarshalBinary(bad); err == nil {
				t.Errorf("%s: %d malformed bytes decoded", mc.name, len(bad))
			}
		}
	}
}
