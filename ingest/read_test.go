package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/schemas"
)

// episode is a generated episode in the user's terms.
type episode struct {
	id   string
	obs  []string
	act  []string
	rew  []float64
	prop []float64
	term bool // ended early: terminal on its last step
}

func genEpisodes(rng *rand.Rand, K, H int) []episode {
	obsSyms := []string{"sunny", "rain", "fog", "b", "A", "zz"}
	actSyms := []string{"left", "right", "stay"}
	eps := make([]episode, K)
	for k := range eps {
		L := H
		term := false
		if rng.IntN(4) == 0 {
			L = 1 + rng.IntN(H)
			term = true // an early end may also be on step H
		}
		e := episode{id: fmt.Sprintf("ep-%d", rng.IntN(1_000_000)*100+k), term: term}
		for range L {
			e.obs = append(e.obs, obsSyms[rng.IntN(len(obsSyms))])
			e.act = append(e.act, actSyms[rng.IntN(len(actSyms))])
			e.rew = append(e.rew, math.Round(rng.NormFloat64()*1000)/100)
			e.prop = append(e.prop, 1-rng.Float64()) // in (0,1]
		}
		eps[k] = e
	}
	return eps
}

// writeEpisodes shuffles the rows of eps into nFiles files under dir.
func writeEpisodes(t testing.TB, rng *rand.Rand, dir string, eps []episode, nFiles, rowGroup int, dict bool) []string {
	type row struct {
		e *episode
		h int
	}
	var rows []row
	for i := range eps {
		for h := range eps[i].obs {
			rows = append(rows, row{&eps[i], h})
		}
	}
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	var files []string
	for f := range nFiles {
		tb := logTable(true, true)
		if dict {
			tb.nodes[0] = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
			tb.nodes[2] = parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary))
			tb.nodes[3] = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
		}
		for i := f; i < len(rows); i += nFiles {
			r := rows[i]
			last := r.h == len(r.e.obs)-1
			tb.add(r.e.id, int64(r.h+1), r.e.obs[r.h], r.e.act[r.h], r.e.rew[r.h], r.e.prop[r.h], last && r.e.term)
		}
		files = append(files, tb.write(t, filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f)), rowGroup))
	}
	return files
}

// checkDataset compares every value of d with the generated episodes.
func checkDataset(t *testing.T, d *Dataset, eps []episode, H int) {
	t.Helper()
	sorted := slices.Clone(eps)
	slices.SortFunc(sorted, func(a, b episode) int { return strings.Compare(a.id, b.id) })
	obsSet, actSet := map[string]bool{}, map[string]bool{}
	padded := false
	for _, e := range eps {
		for h := range e.obs {
			obsSet[e.obs[h]], actSet[e.act[h]] = true, true
		}
		padded = padded || len(e.obs) < H
	}
	if padded {
		obsSet[EndSymbol], actSet[EndSymbol] = true, true
	}
	keys := func(m map[string]bool) []string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		slices.Sort(s)
		return s
	}
	if want := keys(obsSet); !slices.Equal(d.ObsVocab, want) {
		t.Fatalf("ObsVocab = %q, want %q", d.ObsVocab, want)
	}
	if want := keys(actSet); !slices.Equal(d.ActVocab, want) {
		t.Fatalf("ActVocab = %q, want %q", d.ActVocab, want)
	}
	if d.Horizon != H || d.NumEpisodes() != len(eps) {
		t.Fatalf("H=%d K=%d, want %d, %d", d.Horizon, d.NumEpisodes(), H, len(eps))
	}
	for k, e := range sorted {
		if d.EpisodeIDs[k] != e.id || int(d.Length[k]) != len(e.obs) {
			t.Fatalf("episode %d: id %q length %d, want %q %d", k, d.EpisodeIDs[k], d.Length[k], e.id, len(e.obs))
		}
		for h := range H {
			i := k*H + h
			wo, wa, wr, wp := EndSymbol, EndSymbol, 0.0, 1.0
			if h < len(e.obs) {
				wo, wa, wr, wp = e.obs[h], e.act[h], e.rew[h], e.prop[h]
			}
			if got := d.ObsVocab[d.Obs[i]]; got != wo {
				t.Fatalf("episode %q step %d: observation %q, want %q", e.id, h+1, got, wo)
			}
			if got := d.ActVocab[d.Act[i]]; got != wa {
				t.Fatalf("episode %q step %d: action %q, want %q", e.id, h+1, got, wa)
			}
			if d.Reward[i] != wr || d.Propensity[i] != wp {
				t.Fatalf("episode %q step %d: reward %v propensity %v, want %v %v", e.id, h+1, d.Reward[i], d.Propensity[i], wr, wp)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, dict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dict=%v", dict), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const K, H = 200, 6
			eps := genEpisodes(rng, K, H)
			// The horizon comes from the data: make sure one episode is full.
			eps[0].term = false
			for len(eps[0].obs) < H {
				eps[0].obs = append(eps[0].obs, "fog")
				eps[0].act = append(eps[0].act, "stay")
				eps[0].rew = append(eps[0].rew, 0.5)
				eps[0].prop = append(eps[0].prop, 0.25)
			}
			dir := t.TempDir()
			files := writeEpisodes(t, rng, dir, eps, 3, 37, dict)
			d, err := Read(context.Background(), files, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Rows != int64(countRows(eps)) {
				t.Errorf("Rows = %d, want %d", d.Rows, countRows(eps))
			}
			checkDataset(t, d, eps, H)

			// File order and worker count do not change anything.
			rev := slices.Clone(files)
			slices.Reverse(rev)
			d2, err := Read(context.Background(), rev, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d, d2) {
				t.Error("dataset differs with reversed files and one worker")
			}
			// Nor does the number of files holding the same rows.
			one := writeEpisodes(t, rng, t.TempDir(), eps, 1, 1000, dict)
			d3, err := Read(context.Background(), one, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d3.Rows = d.Rows
			if !reflect.DeepEqual(d, d3) {
				t.Error("dataset differs when the rows are in one file")
			}
		})
	}
}

func countRows(eps []episode) int {
	n := 0
	for _, e := range eps {
		n += len(e.obs)
	}
	return n
}

// TestIntegerSymbols: integer ids sort numerically; integer symbols are
// rendered in decimal and sorted bytewise.
func TestIntegerSymbols(t *testing.T) {
	tb := &table{}
	tb.col("episode_id", parquet.Int(64)).col("step", parquet.Int(32)).
		col("observation", parquet.Encoded(parquet.Int(64), &parquet.RLEDictionary)).col("action", parquet.Int(32)).
		col("reward", parquet.Leaf(parquet.FloatType))
	tb.add(int64(10), int32(1), int64(9), int32(2), float32(0.5))
	tb.add(int64(10), int32(2), int64(10), int32(1), float32(-1))
	tb.add(int64(9), int32(2), int64(-3), int32(2), float32(2))
	tb.add(int64(9), int32(1), int64(9), int32(1), float32(0.25))
	d, err := Read(context.Background(), []string{tb.write(t, tmpPath(t, "ints.parquet"), 0)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"9", "10"}; !slices.Equal(d.EpisodeIDs, want) {
		t.Errorf("EpisodeIDs = %q, want %q", d.EpisodeIDs, want)
	}
	if want := []string{"-3", "10", "9"}; !slices.Equal(d.ObsVocab, want) {
		t.Errorf("ObsVocab = %q, want %q", d.ObsVocab, want)
	}
	if want := []string{"1", "2"}; !slices.Equal(d.ActVocab, want) {
		t.Errorf("ActVocab = %q, want %q", d.ActVocab, want)
	}
	// episode 9: (9,1,0.25) (-3,2,2); episode 10: (9,2,0.5) (10,1,-1)
	if want := []uint16{2, 0, 2, 1}; !slices.Equal(d.Obs, want) {
		t.Errorf("Obs = %v, want %v", d.Obs, want)
	}
	if want := []uint16{0, 1, 1, 0}; !slices.Equal(d.Act, want) {
		t.Errorf("Act = %v, want %v", d.Act, want)
	}
	if want := []float64{0.25, 2, 0.5, -1}; !slices.Equal(d.Reward, want) {
		t.Errorf("Reward = %v, want %v", d.Reward, want)
	}
	if d.Propensity != nil {
		t.Error("Propensity should be nil without a propensity column")
	}
}

// TestAliasesAndMapping: default aliases and user column names.
func TestAliasesAndMapping(t *testing.T) {
	tb := &table{}
	tb.col("episode_id", parquet.String()).col("t", parquet.Int(64)).col("observation", parquet.String()).
		col("action", parquet.String()).col("reward", parquet.Leaf(parquet.DoubleType)).
		col("pscore", parquet.Leaf(parquet.DoubleType)).col("done", parquet.Leaf(parquet.BooleanType))
	tb.add("a", int64(1), "x", "u", 1.0, 0.5, false).add("a", int64(2), "y", "v", 2.0, 0.25, false).
		add("b", int64(1), "x", "v", 3.0, 1.0, true)
	path := tb.write(t, tmpPath(t, "alias.parquet"), 0)
	d, err := Read(context.Background(), []string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.5, 0.25, 1, 1}; !slices.Equal(d.Propensity, want) {
		t.Errorf("Propensity = %v, want %v", d.Propensity, want)
	}
	if want := []int32{2, 1}; !slices.Equal(d.Length, want) {
		t.Errorf("Length = %v, want %v", d.Length, want)
	}
	if want := []string{EndSymbol, "x", "y"}; !slices.Equal(d.ObsVocab, want) {
		t.Errorf("ObsVocab = %q, want %q", d.ObsVocab, want)
	}

	// Mapped names: only the given name is accepted for the role.
	tb2 := &table{}
	tb2.col("traj", parquet.String()).col("h", parquet.Int(64)).col("o", parquet.String()).
		col("a", parquet.String()).col("r", parquet.Leaf(parquet.DoubleType)).col("p", parquet.Leaf(parquet.DoubleType))
	tb2.add("a", int64(1), "x", "u", 1.0, 0.5)
	path2 := tb2.write(t, tmpPath(t, "mapped.parquet"), 0)
	m := schemas.Mapping{Episode: "traj", Step: "h", Observation: "o", Action: "a", Reward: "r", Propensity: "p"}
	d, err = Read(context.Background(), []string{path2}, Options{Columns: m})
	if err != nil {
		t.Fatal(err)
	}
	if d.Propensity[0] != 0.5 || d.EpisodeIDs[0] != "a" {
		t.Errorf("mapped read: %+v", d)
	}
	m.Propensity = "missing"
	if _, err := Read(context.Background(), []string{path2}, Options{Columns: m}); !errors.Is(err, ErrMissingColumn) {
		t.Errorf("mapped to a missing optional column: err = %v, want ErrMissingColumn", err)
	}
}

func TestDecimalReward(t *testing.T) {
	tb := &table{}
	tb.col("episode_id", parquet.Int(64)).col("step", parquet.Int(64)).col("observation", parquet.String()).
		col("action", parquet.String()).col("reward", parquet.Decimal(2, 9, parquet.Int32Type))
	tb.add(int64(1), int64(1), "o", "a", int32(-125)) // -1.25
	d, err := Read(context.Background(), []string{tb.write(t, tmpPath(t, "dec.parquet"), 0)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Reward[0] != -1.25 {
		t.Errorf("decimal reward = %v, want -1.25", d.Reward[0])
	}
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.parquet", "a.parquet", "c.txt"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	got, err := Expand([]string{filepath.Join(dir, "*.parquet")})
	want := []string{filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("glob: %v %v, want %v", got, err, want)
	}
	if got, err := Expand([]string{dir}); err != nil || !slices.Equal(got, want) {
		t.Errorf("dir: %v %v, want %v", got, err, want)
	}
	if _, err := Expand([]string{filepath.Join(dir, "*.csv")}); !errors.Is(err, ErrIO) {
		t.Errorf("no match: err = %v, want ErrIO", err)
	}
	if _, err := Expand([]string{filepath.Join(dir, "nope.parquet")}); !errors.Is(err, ErrIO) {
		t.Errorf("missing file: err = %v, want ErrIO", err)
	}
}

// TestMergeKeysLayouts: mergeKeys gives the sorted distinct keys of all
// tables and each local key's index among them, computed here by a sort
// and a binary search, on the layouts its increasing path takes (tables
// in order, disjoint or sharing a boundary key, empty ones between) and
// on those it leaves to the sort (a table out of order, overlapping
// ranges, a table not increasing).
func TestMergeKeysLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	increasing := func(from, n int) []int64 {
		l := make([]int64, n)
		for i := range l {
			from += 1 + rng.IntN(3)
			l[i] = int64(from)
		}
		return l
	}
	layouts := map[string][][]int64{
		"disjoint":                  {increasing(0, 5), increasing(20, 7), increasing(40, 1)},
		"shared bounds":             {{1, 3, 5}, {5, 6}, {6}, {6, 9, 12}},
		"empty between":             {{}, {2, 4}, {}, {4, 8}, {}},
		"out of order":              {increasing(40, 4), increasing(0, 5)},
		"overlapping":               {{1, 5, 9}, {3, 4, 10}},
		"negative, in no order":     {{5, -3, 9, math.MinInt64}, {-100, 2, math.MaxInt64, -3}},
		"not increasing in a table": {{1, 2, 7}, {9, 8}},
		"one table":                 {increasing(-10, 30)},
		"none":                      {},
	}
	// Enough keys in no order for the radix passes (4096 or more), of
	// both signs.
	var many [][]int64
	for range 3 {
		seen := map[int64]bool{}
		var l []int64
		for len(l) < 3000 {
			if v := int64(rng.Uint64()); !seen[v] {
				seen[v] = true
				l = append(l, v, -v/2)
				seen[-v/2] = true
			}
		}
		many = append(many, l)
	}
	layouts["many, both signs, in no order"] = many
	for name, local := range layouts {
		t.Run(name, func(t *testing.T) { checkMergeKeys(t, local) })
	}
}

// checkMergeKeys compares mergeKeys(local) with a sort of all the keys
// and a binary search of each.
func checkMergeKeys[T int64 | string](t *testing.T, local [][]T) {
	t.Helper()
	var want []T
	for _, l := range local {
		want = append(want, l...)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	global, l2g := mergeKeys(local)
	if len(global) != len(want) || (len(want) > 0 && !slices.Equal(global, want)) {
		t.Fatalf("%d keys merged, want %d", len(global), len(want))
	}
	for c, l := range local {
		for i, k := range l {
			if j, _ := slices.BinarySearch(want, k); int(l2g[c][i]) != j {
				t.Fatalf("table %d key %v: global code %d, want %d", c, k, l2g[c][i], j)
			}
		}
	}
}

// TestRenderIntsParts: integers render in decimal across the parallel
// parts' boundaries.
func TestRenderIntsParts(t *testing.T) {
	vals := make([]int64, 3<<16+5)
	for i := range vals {
		vals[i] = int64(i*7919) - 1<<20
	}
	vals[0], vals[1] = math.MinInt64, math.MaxInt64
	got := renderInts(vals)
	for i, v := range vals {
		if got[i] != strconv.FormatInt(v, 10) {
			t.Fatalf("value %d: %q, want %d", i, got[i], v)
		}
	}
}

// TestMergeStrings: string keys in no order merge into the sorted
// distinct keys with each local key's index among them, against a sort
// and a binary search: keys sharing their first 8 bytes, shorter than 8,
// with NUL bytes, empty, repeated across tables, in few tables (the
// comparison sort) and in many (the radix passes).
func TestMergeStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	alphabet := []string{"", "\x00", "a", "ab", "ab\x00", "abcdefgh", "abcdefgh0", "abcdefgh1", "abcdefghz", "zz", "€", "abcdefg"}
	gen := func() string {
		if rng.IntN(3) == 0 {
			return alphabet[rng.IntN(len(alphabet))]
		}
		return fmt.Sprintf("%s%x", alphabet[rng.IntN(len(alphabet))], rng.Uint64N(1<<uint(4*rng.IntN(8))))
	}
	for _, tables := range []int{1, 3, 40} {
		local := make([][]string, tables)
		for c := range local {
			seen := map[string]bool{}
			for range rng.IntN(400) {
				if s := gen(); !seen[s] { // a table holds each key once
					seen[s] = true
					local[c] = append(local[c], s)
				}
			}
		}
		checkMergeKeys(t, local)
	}
}
