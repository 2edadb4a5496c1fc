package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The files in testdata were written by DuckDB (testdata/make_duckdb.mjs);
// the expected values below recompute the formulas of that script.

func duckLen(i int) int {
	if i%7 == 3 {
		return 1 + i%5
	}
	return 6
}

// checkDuck compares d with the formulas: episode k of d is episode
// iOf(k) of the script; obs/act render the symbols.
func checkDuck(t *testing.T, d *Dataset, n int, iOf func(k int) int, id func(i int) string,
	obs func(i, h int) string, act func(i, h int) string, rew func(i, h int) float64) {
	t.Helper()
	const H = 6
	if d.Horizon != H || d.NumEpisodes() != n {
		t.Fatalf("H=%d K=%d, want %d %d", d.Horizon, d.NumEpisodes(), H, n)
	}
	for k := range n {
		i := iOf(k)
		if d.EpisodeIDs[k] != id(i) || int(d.Length[k]) != duckLen(i) {
			t.Fatalf("episode %d: id %q length %d, want %q %d", k, d.EpisodeIDs[k], d.Length[k], id(i), duckLen(i))
		}
		for h := 1; h <= H; h++ {
			j := k*H + h - 1
			wo, wa, wr, wp := EndSymbol, EndSymbol, 0.0, 1.0
			if h <= duckLen(i) {
				wo, wa, wr, wp = obs(i, h), act(i, h), rew(i, h), 1.0/float64(1+(i+h)%4)
			}
			if d.ObsVocab[d.Obs[j]] != wo || d.ActVocab[d.Act[j]] != wa || d.Reward[j] != wr {
				t.Fatalf("episode %s step %d: (%s,%s,%v), want (%s,%s,%v)", id(i), h,
					d.ObsVocab[d.Obs[j]], d.ActVocab[d.Act[j]], d.Reward[j], wo, wa, wr)
			}
			if d.Propensity != nil && d.Propensity[j] != wp {
				t.Fatalf("episode %s step %d: propensity %v, want %v", id(i), h, d.Propensity[j], wp)
			}
		}
	}
}

func strID(i int) string          { return fmt.Sprintf("ep%03d", i) }
func strObs(i, h int) string      { return "o" + strconv.Itoa((i*7+h*3)%5) }
func strAct(i, h int) string      { return "a" + strconv.Itoa((i+h)%3) }
func strRew(i, h int) float64     { return float64(i%4)*0.5 - float64(h)*0.25 }
func identity(k int) int          { return k }
func duckFile(name string) string { return filepath.Join("testdata", name) }

func TestDuckDBStrings(t *testing.T) {
	d, err := Read(context.Background(), []string{duckFile("duckdb_strings.parquet")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for i := range 800 {
		rows += duckLen(i)
	}
	if d.Rows != int64(rows) {
		t.Errorf("Rows = %d, want %d", d.Rows, rows)
	}
	if want := []string{EndSymbol, "o0", "o1", "o2", "o3", "o4"}; !slices.Equal(d.ObsVocab, want) {
		t.Errorf("ObsVocab = %q, want %q", d.ObsVocab, want)
	}
	checkDuck(t, d, 800, identity, strID, strObs, strAct, strRew)
}

func TestDuckDBIntegers(t *testing.T) {
	d, err := Read(context.Background(), []string{duckFile("duckdb_ints.parquet")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Integer symbols 0..11 are sorted as decimal strings, and "<end>"
	// after the digits ('<' is 0x3C).
	if want := []string{"0", "1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9", EndSymbol}; !slices.Equal(d.ObsVocab, want) {
		t.Errorf("ObsVocab = %q, want %q", d.ObsVocab, want)
	}
	// ids 1000-13i sort numerically: episode k is i = 49-k.
	checkDuck(t, d, 50, func(k int) int { return 49 - k },
		func(i int) string { return strconv.Itoa(1000 - 13*i) },
		func(i, h int) string { return strconv.Itoa((i*7 + h*3) % 12) },
		func(i, h int) string { return strconv.Itoa((i + h) % 3) },
		func(i, h int) float64 { return float64(h) * 0.5 })
}

func TestDuckDBNulls(t *testing.T) {
	files := []string{duckFile("duckdb_nulls.parquet")}
	_, err := Read(context.Background(), files, Options{})
	var ee *EpisodeError
	if !errors.As(err, &ee) || !errors.Is(err, ErrNull) || ee.Episode != "ep007" || ee.Step != 2 || ee.More != 1 ||
		!strings.Contains(err.Error(), `duckdb_nulls.parquet: episode "ep007" step 2: null value in column "reward"`) {
		t.Fatalf("err = %v, want null reward in ep007 step 2 and 1 more", err)
	}
	d, err := Read(context.Background(), files, Options{OnInvalid: OnInvalidSkip})
	if err != nil {
		t.Fatal(err)
	}
	want := []Quarantined{
		{EpisodeID: "ep007", File: files[0], Step: 2, Reason: `null value in column "reward"`},
		{EpisodeID: "ep011", File: files[0], Step: 5, Reason: `null value in column "observation"`},
	}
	if !slices.Equal(d.Quarantined, want) {
		t.Errorf("Quarantined = %+v, want %+v", d.Quarantined, want)
	}
	var kept []int
	for i := range 50 {
		if i != 7 && i != 11 {
			kept = append(kept, i)
		}
	}
	if d.Propensity != nil {
		t.Error("no propensity column, yet Propensity is set")
	}
	checkDuck(t, d, 48, func(k int) int { return kept[k] }, strID, strObs, strAct, strRew)
}
