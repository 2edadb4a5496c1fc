package pessimism_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

func TestParseAlpha(t *testing.T) {
	cases := []struct {
		in   string
		mode pessimism.AlphaMode
		vals []float64
	}{
		{"", pessimism.AlphaAuto, nil},
		{"0.5", pessimism.AlphaFixed, []float64{0.5}},
		{"theory", pessimism.AlphaTheory, nil},
		{"0, 0.3,1", pessimism.AlphaList, []float64{0, 0.3, 1}},
		{"auto", pessimism.AlphaAuto, nil},
	}
	for _, c := range cases {
		got, err := pessimism.ParseAlpha(c.in)
		if err != nil || got.Mode != c.mode || !slices.Equal(got.Values, c.vals) {
			t.Errorf("ParseAlpha(%q) = %+v, %v", c.in, got, err)
		}
	}
	for _, bad := range []string{"-1", "x", "1,,2", "NaN", "inf"} {
		if _, err := pessimism.ParseAlpha(bad); !errors.Is(err, pessimism.ErrOptions) {
			t.Errorf("ParseAlpha(%q): %v", bad, err)
		}
	}
}

func TestTheoryAlphaHandComputed(t *testing.T) {
	// K=100, H=2, |O|=|A|=2, r=1, m=1, d=2, γ=1, ι=0.5, λ=1, δ=0.05.
	th, err := pessimism.TheoryAlpha(pessimism.TheoryParams{Gamma: 1, Iota: 0.5, Lambda: 1, Episodes: 100, Horizon: 2, Obs: 2, Actions: 2, Rank: 1, MaxDim: 2})
	if err != nil {
		t.Fatal(err)
	}
	lnPMin := math.Log(0.05) - math.Log(100) - math.Log(2) - 2*math.Log(4)
	lnEps := lnPMin - math.Log(200)
	lnNet := 2 * 1 * 4 * 4 * (math.Log(4) - lnEps)
	beta := 31*math.Log(3*100/0.05) + 31*lnNet
	want := math.Sqrt(4*1*2*1*2 + 7*beta/0.25)
	if math.Abs(th.Alpha-want) > 1e-9*want || th.QA != 1 {
		t.Fatalf("α̂ = %v (Q_A %d), want %v", th.Alpha, th.QA, want)
	}
	if _, err := pessimism.TheoryAlpha(pessimism.TheoryParams{Iota: 0.5, Episodes: 1, Horizon: 1, Obs: 1, Actions: 1, Rank: 1, MaxDim: 1}); !errors.Is(err, pessimism.ErrOptions) {
		t.Fatalf("missing γ: %v", err)
	}
}

func TestIota(t *testing.T) {
	d := &ingest.Dataset{Horizon: 3, Obs: make([]uint16, 6), Act: make([]uint16, 6),
		Propensity: []float64{0.5, 0.4, 1, 0.9, 0.9, 0.3}}
	for _, c := range []struct {
		m    int
		want float64
	}{{1, 0.3}, {2, 0.5 * 0.4}, {3, 0.5 * 0.4}} {
		got, err := pessimism.Iota(d, c.m)
		if err != nil || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("m=%d: ι = %v, %v; want %v", c.m, got, err, c.want)
		}
	}
	d.Propensity = nil
	if _, err := pessimism.Iota(d, 1); !errors.Is(err, pessimism.ErrData) {
		t.Errorf("no propensities: %v", err)
	}
}
