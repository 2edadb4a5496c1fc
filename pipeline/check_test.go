package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/report"
)

// tigerLogs simulates K episodes of H steps of the shipped tiger model
// under the uniform behaviour.
func tigerLogs(t *testing.T, H, K int, seed uint64) *ingest.Dataset {
	t.Helper()
	m, err := pomdp.ParseFile(filepath.Join("..", "examples", "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := pomdp.ParseBehavior("uniform", m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pomdp.SimulateDataset(context.Background(), m, H, K, b, seed)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var quick = estimate.Options{Rank: 2, Restarts: 1, MaxIter: 20}

func fixedAlpha(a float64) pessimism.AlphaSpec {
	return pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{a}}
}

// noNonFinite fails when any output file of the run directory holds a
// non-finite number.
func noNonFinite(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{report.ManifestFile, report.HTMLFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"NaN", "Inf"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %s", name, bad)
			}
		}
	}
	for _, name := range []string{report.PolicyFile, report.ModelFile, report.CoverageFile, report.EpisodesFile, report.FitFile, report.AlphaFile} {
		if _, err := arrowio.ReadArrow(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// One-step logs (contextual bandits) run end to end and write every file
// (the Θ_min slack is +Inf there: no prefix is checked). Before, every
// H = 1 run failed writing the manifest: json: unsupported value: +Inf.
func TestOneStepLogsEndToEnd(t *testing.T) {
	for name, o := range map[string]Options{
		"auto":  {Estimate: quick, Seed: 1},
		"fixed": {Estimate: quick, Alpha: fixedAlpha(0.1), Seed: 1},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := Fit(context.Background(), tigerLogs(t, 1, 300, 1), nil, o)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := report.WriteOutcome(dir, out); err != nil {
				t.Fatal(err)
			}
			noNonFinite(t, dir)
		})
	}
}

// Too few episodes for the split or for the held-out share is a data
// error that says how many there are and how many are needed.
func TestTooFewEpisodes(t *testing.T) {
	for _, c := range []struct {
		name    string
		H, K    int
		alpha   pessimism.AlphaSpec
		wantMsg []string
	}{
		{"one episode, fixed α", 4, 1, fixedAlpha(0.1), []string{"1 episode of 4 steps", "needs at least 4"}},
		{"fewer than H", 4, 3, fixedAlpha(0.1), []string{"3 episodes of 4 steps", "needs at least 4"}},
		{"fewer than H, auto α", 4, 2, pessimism.AlphaSpec{}, []string{"2 episodes of 4 steps", "needs at least 4"}},
		{"held-out share", 4, 4, alphaList(0.1, 1), []string{"4 episodes", "needs at least 8"}},
		{"one-step, one episode, α list", 1, 1, alphaList(0.1, 1), []string{"1 episode,", "needs at least 2"}},
	} {
		_, err := Fit(context.Background(), tigerLogs(t, c.H, c.K, 3), nil, Options{Estimate: quick, Alpha: c.alpha})
		if !errors.Is(err, ErrTooFew) || errkind.Of(err) != errkind.Data {
			t.Errorf("%s: err = %v, want a too-few-episodes data error", c.name, err)
			continue
		}
		msg := err.Error()
		for _, w := range c.wantMsg {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", c.name, msg, w)
			}
		}
		if strings.HasPrefix(msg, "no rows") {
			t.Errorf("%s: %q", c.name, msg)
		}
	}
	// One episode of one step with a fixed α is a (tiny) valid run.
	if _, err := Fit(context.Background(), tigerLogs(t, 1, 1, 3), nil, Options{Estimate: quick, Alpha: fixedAlpha(0.1)}); err != nil {
		t.Errorf("one one-step episode: %v", err)
	}
}

// Rewards the [0,1] rescaling cannot represent are a data error naming
// the episode; before, ±1e308 panicked in the planner (index out of range
// [-1]) and all-1e308 rewards gave NaN figures.
func TestRewardsOutOfRange(t *testing.T) {
	set := func(d *ingest.Dataset, f func(k, h int) float64) *ingest.Dataset {
		for k := 0; k < d.NumEpisodes(); k++ {
			for h := 0; h < d.Horizon; h++ {
				d.Reward[k*d.Horizon+h] = f(k, h)
			}
		}
		return d
	}
	for _, c := range []struct {
		name string
		H    int
		f    func(k, h int) float64
		want string
	}{
		{"±1e308", 4, func(k, h int) float64 { return float64(1-2*(k%2)) * 1e308 }, "beyond ±1e+100"},
		{"one-step ±1e308", 1, func(k, h int) float64 { return float64(1-2*(k%2)) * 1e308 }, "step 1"},
		{"sum overflows", 4, func(k, h int) float64 { return 1e308 }, "beyond ±1e+100"},
		{"spread below precision", 2, func(k, h int) float64 { return 1e20 + float64(k%2)*1e5 }, "subtract a constant"},
	} {
		d := set(tigerLogs(t, c.H, 20, 5), c.f)
		_, err := Fit(context.Background(), d, nil, Options{Estimate: quick, Alpha: fixedAlpha(0.1)})
		if !errors.Is(err, ErrReward) || errkind.Of(err) != errkind.Data {
			t.Errorf("%s: err = %v, want a reward data error", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), "episode ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q does not name the episode or say %q", c.name, err, c.want)
		}
	}
	// Large but representable rewards, and a constant return, run and
	// write only finite figures.
	for name, f := range map[string]func(k, h int) float64{
		"1e90":     func(k, h int) float64 { return 1e90 * float64(k%3) },
		"constant": func(k, h int) float64 { return 5 },
	} {
		d := set(tigerLogs(t, 2, 20, 5), f)
		out, err := Fit(context.Background(), d, nil, Options{Estimate: quick, Alpha: fixedAlpha(0.1)})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		h := out.Run.Manifest.Headline
		for _, v := range []report.Float{h.LCB, h.LCBUnits, h.ModelValueUnits, h.BehaviorUnits, h.IWValueUnits} {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Errorf("%s: headline %+v", name, h)
				break
			}
		}
	}
}

// Honest verdicts on small and degenerate logs, end to end: 10 tiger
// episodes with α = 0.1 (before: "The logs justify the policy … Coverage
// is good", ESS 0, true value below the behaviour's), 5 with the
// defaults, and 2000 identical episodes (before: "the lower confidence
// bound (20) is below the behaviour's mean return (20)").
func TestVerdictSmallAndDegenerateLogs(t *testing.T) {
	d := tigerLogs(t, 4, 10, 3)
	same := make([]int, 2000)
	for name, c := range map[string]struct {
		d *ingest.Dataset
		o Options
	}{
		"10 episodes, α = 0.1": {d, Options{Estimate: quick, Alpha: fixedAlpha(0.1), Seed: 1}},
		"5 episodes, auto α":   {tigerLogs(t, 4, 5, 3), Options{Estimate: quick, Seed: 1}},
		"2000 identical":       {d.Subset(same), Options{Estimate: quick, Alpha: fixedAlpha(0.1), Seed: 1}},
	} {
		out, err := Fit(context.Background(), c.d, nil, c.o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h := out.Run.Manifest.Headline
		if h.Evidence != report.EvidenceInsufficient || h.Recommendation != report.RecommendBehavior {
			t.Errorf("%s: evidence %q, recommendation %q: %s", name, h.Evidence, h.Recommendation, h.Verdict)
		}
		for _, bad := range []string{"justify", "is below the behaviour's mean", "Coverage is good"} {
			if strings.Contains(h.Verdict, bad) {
				t.Errorf("%s: verdict says %q: %s", name, bad, h.Verdict)
			}
		}
	}
}

// On small logs the episodes that fit the model for choosing α may miss a
// reward value that the others have; the final fit then starts afresh
// instead of failing with "start model does not match the data" (an
// options error, exit 2, for valid logs).
func TestSelectionTrainingMissesARewardValue(t *testing.T) {
	d := tigerLogs(t, 1, 40, 9)
	for k := range d.Reward {
		d.Reward[k] = 0
	}
	// One episode with a reward no other has: with 40 episodes and 8 held
	// out, the seed decides whether it is held out; try until it is.
	for seed := uint64(1); seed < 40; seed++ {
		e := d.Subset(seqInts(40))
		e.Reward[int(seed)%40] = 1
		_, err := Fit(context.Background(), e, nil, Options{Estimate: quick, Seed: seed})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// banditLogs are one-step logs like public recommendation logs: one
// context, items actions chosen uniformly (logged propensity 1/items),
// every item clicked with the same probability ctr.
func banditLogs(K, items int, ctr float64, seed uint64) *ingest.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	d := &ingest.Dataset{Horizon: 1, ObsVocab: []string{"ctx"}}
	for i := 0; i < items; i++ {
		d.ActVocab = append(d.ActVocab, fmt.Sprintf("item%03d", i))
	}
	for k := 0; k < K; k++ {
		d.EpisodeIDs = append(d.EpisodeIDs, fmt.Sprintf("%07d", k))
		d.Length = append(d.Length, 1)
		d.Obs = append(d.Obs, 0)
		d.Act = append(d.Act, uint16(rng.IntN(items)))
		r := 0.0
		if rng.Float64() < ctr {
			r = 1
		}
		d.Reward = append(d.Reward, r)
		d.Propensity = append(d.Propensity, 1/float64(items))
		d.Rows++
	}
	return d
}

// One-step logs with 80 items and a click-through rate of 0.4%: a few
// dozen clicks cannot prove any item better than the behaviour's mix (every
// item has the same rate), whichever item the model prefers.
func TestBanditLogsVerdict(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		d := banditLogs(10000, 80, 0.004, seed)
		out, err := Fit(context.Background(), d, nil, Options{Estimate: estimate.Options{Rank: 1, Restarts: 1, MaxIter: 50}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		h := out.Run.Manifest.Headline
		if h.Evidence == report.EvidenceJustified || h.Recommendation != report.RecommendBehavior {
			t.Errorf("seed %d: evidence %s: %s", seed, h.Evidence, h.Verdict)
		}
		dir := t.TempDir()
		if err := report.WriteOutcome(dir, out); err != nil {
			t.Fatal(err)
		}
		noNonFinite(t, dir)
		t.Logf("seed %d: %s", seed, h.Verdict)
	}
}

// A stated return range replaces the model's own bounds for the [0,1]
// scale; a logged return outside it is a data error, an empty range an
// options error.
func TestReturnRange(t *testing.T) {
	d := tigerLogs(t, 2, 40, 2)
	o := Options{Estimate: quick, Alpha: fixedAlpha(0.1), ReturnRange: [2]float64{-1000, 100}}
	out, err := Fit(context.Background(), d, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Model.ReturnMin != -1000 || out.Model.ReturnMax != 100 || out.Run.Manifest.Parameters["return_range"] != [2]float64{-1000, 100} {
		t.Errorf("model range [%g, %g], parameters %v", out.Model.ReturnMin, out.Model.ReturnMax, out.Run.Manifest.Parameters)
	}
	o.ReturnRange = [2]float64{-5, 100}
	if _, err := Fit(context.Background(), d, nil, o); !errors.Is(err, ErrReward) || !strings.Contains(err.Error(), "outside the stated return range") {
		t.Errorf("range excluding a logged return: %v", err)
	}
	o.ReturnRange = [2]float64{3, 3}
	if _, err := Fit(context.Background(), d, nil, o); !errors.Is(err, ErrOptions) {
		t.Errorf("empty range: %v", err)
	}
	// Without a stated range the scale is H × the logged reward extremes
	// (tiger: rewards −100, −1 and 10 over 2 steps).
	o.ReturnRange = [2]float64{}
	out, err = Fit(context.Background(), d, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range d.Reward {
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	if out.Model.ReturnMin != 2*lo || out.Model.ReturnMax != 2*hi {
		t.Errorf("model range [%g, %g], want [%g, %g]", out.Model.ReturnMin, out.Model.ReturnMax, 2*lo, 2*hi)
	}
}

// With too few episodes to hold any out for choosing the rank, the
// fallback rank is stated in the notes instead of used silently.
func TestRankFallbackNoted(t *testing.T) {
	out, err := Fit(context.Background(), tigerLogs(t, 1, 2, 4), nil, Options{Estimate: estimate.Options{Restarts: 1, MaxIter: 10}, Alpha: fixedAlpha(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(out.Run.Manifest.Notes, " "), "Too few episodes (2) to hold any out for choosing the rank") {
		t.Errorf("notes %q", out.Run.Manifest.Notes)
	}
}

func alphaList(v ...float64) pessimism.AlphaSpec {
	return pessimism.AlphaSpec{Mode: pessimism.AlphaList, Values: v}
}

// TestAutoAlphaOnFewEpisodes: with α auto and too few episodes to hold
// some out, the run uses the default α and says so instead of failing.
func TestAutoAlphaOnFewEpisodes(t *testing.T) {
	out, err := Fit(context.Background(), tigerLogs(t, 4, 5, 3), nil, Options{Estimate: quick, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out.Alpha != pessimism.DefaultAlpha || out.Selection != nil {
		t.Errorf("α %v, selection %v", out.Alpha, out.Selection)
	}
	found := false
	for _, n := range out.Run.Manifest.Notes {
		found = found || strings.Contains(n, "too few to choose α")
	}
	if !found {
		t.Errorf("notes do not say why α is the default: %q", out.Run.Manifest.Notes)
	}
}
