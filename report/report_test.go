package report

import (
	"encoding/json"
	"fmt"
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
)

func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A, B, C Float }{1.5, Float(math.Inf(1)), Float(math.NaN())})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"A":1.5,"B":null,"C":null}` {
		t.Errorf("got %s", b)
	}
	var back struct{ A, C Float }
	if err := json.Unmarshal(b, &back); err != nil || back.A != 1.5 || !math.IsNaN(float64(back.C)) {
		t.Errorf("back = %+v, %v", back, err)
	}
}

func TestWriteTablesAndHTML(t *testing.T) {
	dir := t.TempDir()
	run := &Run{RunID: "abc",
		Coverage:   []CoverageRow{{Step: 1, LoggedHistories: 3, Iota: 0.5, CoveredMass: 1, CInf: 1}, {Step: 2, LoggedHistories: 9, Iota: 0.5, CoveredMass: 0.8, CInf: 2.5}},
		Episodes:   EpisodeRows{ID: []string{"1", "2"}, Split: []int32{0, 1}, LogLik: []float64{-1, -2}, Bonus: []float64{0.1, 0.2}, Weight: []float64{2, 0}},
		Trace:      []TraceRow{{2, 0, 0, -10}, {2, 0, 1, -9}, {2, 1, 0, -11}, {2, 1, 1, -9.5}},
		Ranks:      []RankRow{{1, -12, -13, false, "full", 8, 2}, {2, -9, -9.5, true, "full", 8, 2}},
		Alphas:     []AlphaRow{{Alpha: 0, ValueReward: .6, LCB: .6, IW: .55, IWLo: .5, IWHi: .6}, {Alpha: 1, ValueReward: .6, ValueBonus: .1, LCB: .5, IW: .55, IWLo: .5, IWHi: .6, Chosen: true}},
		BonusSteps: summarizeSteps([][]float64{{0.1, 0.2, 0.3}, {0.2, 0.4}}),
		Model:      estimate.ModelRows{Model: estimatetest.RandomModel(2, 2, 2, 2, true, []float64{0, 1}, 1)},
	}
	run.Manifest.Headline = Headline{LCB: .5, ModelValue: .6, IWValue: .55, IWLow: .5, IWHigh: .6, CInf: 2.5, ESS: 100, PlanExact: true, Rank: 2}
	if err := WriteTables(dir, run); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CoverageFile, EpisodesFile, FitFile, AlphaFile, ModelFile} {
		tb, err := arrowio.ReadArrow(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tb.Meta["psrlcb.run_id"] != "abc" {
			t.Errorf("%s: run id metadata %q", name, tb.Meta["psrlcb.run_id"])
		}
	}
	fit, _ := arrowio.ReadArrow(filepath.Join(dir, FitFile))
	if fit.Rows() != 6 {
		t.Errorf("fit.arrow rows = %d, want 4 trace + 2 rank", fit.Rows())
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), "<svg"); n != 6 {
		t.Errorf("report.html has %d plots, want 6", n)
	}
	if !strings.Contains(string(html), "Coverage is good") {
		t.Errorf("verdict missing from report.html")
	}
	m, err := ReadManifest(dir)
	if err != nil || m.Headline.CInf != 2.5 {
		t.Errorf("manifest = %+v, %v", m, err)
	}
}

// A manifest whose stage figures are not finite (Θ_min slack +Inf when no
// prefix was checked, as on one-step logs) is still written, with null in
// their place; a finite one is byte-identical to encoding/json's.
func TestManifestNonFinite(t *testing.T) {
	m := &Manifest{Tool: "psrlcb", Parameters: map[string]any{"lambda": 1.0, "odd": math.NaN(), "cols": map[string]string{"b": "x", "a": "y"}},
		Quarantined: []Quarantined{}}
	m.Headline.LCB = 0.5
	if _, err := marshalFinite(m); err != nil {
		t.Fatal(err)
	}
	m.Parameters["odd"] = 2.0
	finite, _ := marshalFinite(m)
	want, _ := json.MarshalIndent(m, "", "  ")
	if string(finite) != string(want) {
		t.Errorf("finite manifest differs from encoding/json:\n%s\nwant\n%s", finite, want)
	}
	m.Parameters["odd"] = math.Inf(-1)
	m.ThetaMin.Slack, m.ThetaMin.SlackBefore = math.Inf(1), math.Inf(1)
	m.Plan.TreeNodes = math.Inf(1)
	m.Headline.CInf = Float(math.NaN())
	path := filepath.Join(t.TempDir(), ManifestFile)
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if s := string(b); strings.Contains(s, "Inf") || strings.Contains(s, "NaN") || !strings.Contains(s, `"slack": null`) {
		t.Errorf("manifest:\n%s", s)
	}
	back, err := ReadManifest(filepath.Dir(path))
	if err != nil || back.Headline.LCB != 0.5 || !math.IsNaN(float64(back.Headline.CInf)) {
		t.Errorf("read back %+v, %v", back, err)
	}
}

// Non-finite figures print as "n/a", in the page and in fmt.
func TestFloatFormat(t *testing.T) {
	if s := fmt.Sprintf("%.4g|%6.1f|%.4g", Float(math.Inf(1)), Float(math.NaN()), Float(0.25)); s != "n/a|   n/a|0.25" {
		t.Errorf("got %q", s)
	}
}

// summarizeSteps is summarize of each step's values.
func summarizeSteps(steps [][]float64) []StepQuantiles {
	qs := make([]StepQuantiles, len(steps))
	for h, v := range steps {
		qs[h] = summarize(v)
	}
	return qs
}
