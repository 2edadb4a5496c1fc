package ingest

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// handDataset: H=2, three episodes, the last ended after step 1.
//
//	ep0: (x,l,r=1,p=.5)  (y,r,2,.25)
//	ep1: (x,l,0,.5)      (x,l,-1,1)
//	ep2: (x,r,3,.5)      padding
func handDataset() *Dataset {
	return &Dataset{
		Horizon:    2,
		ObsVocab:   []string{EndSymbol, "x", "y"},
		ActVocab:   []string{EndSymbol, "l", "r"},
		EpisodeIDs: []string{"0", "1", "2"},
		Length:     []int32{2, 2, 1},
		Obs:        []uint16{1, 2, 1, 1, 1, 0},
		Act:        []uint16{1, 2, 1, 1, 2, 0},
		Reward:     []float64{1, 2, 0, -1, 3, 0},
		Propensity: []float64{.5, .25, .5, 1, .5, 1},
		Rows:       5,
	}
}

func TestSummarizeByHand(t *testing.T) {
	d := handDataset()
	s := Summarize(d)
	if s.Episodes != 3 || s.Horizon != 2 || s.LoggedRows != 5 || s.Padded != 1 || s.NumObs != 3 || s.NumActions != 3 {
		t.Errorf("counts: %+v", s)
	}
	if want := []SymbolCount{{"x", 4}, {"y", 1}}; !reflect.DeepEqual(s.TopObs, want) {
		t.Errorf("TopObs = %v, want %v", s.TopObs, want)
	}
	if want := []SymbolCount{{"l", 3}, {"r", 2}}; !reflect.DeepEqual(s.TopActions, want) {
		t.Errorf("TopActions = %v, want %v", s.TopActions, want)
	}
	const tol = 1e-12
	near := func(a, b float64) bool { return math.Abs(a-b) <= tol }
	r1, r2 := s.StepReward[0], s.StepReward[1]
	if r1.Min != 0 || r1.Max != 3 || !near(r1.Mean, 4.0/3) || r1.N != 3 {
		t.Errorf("step 1 reward %+v, want min 0 max 3 mean 4/3 n 3", r1)
	}
	if r2.Min != -1 || r2.Max != 2 || !near(r2.Mean, 0.5) || r2.N != 2 {
		t.Errorf("step 2 reward %+v, want min -1 max 2 mean 0.5 n 2", r2)
	}
	if s.Return.Min != -1 || s.Return.Max != 3 || !near(s.Return.Mean, 5.0/3) {
		t.Errorf("return %+v, want min -1 max 3 mean 5/3", s.Return)
	}
	// Logged propensities sorted: .25 .5 .5 .5 1; ranks floor(q·4).
	if want := (Quantiles{.25, .25, .25, .5, .5, 1}); *s.Propensity != want {
		t.Errorf("propensity %+v, want %+v", *s.Propensity, want)
	}
	if s.Iota != .25 || s.IotaEstimated {
		t.Errorf("iota %v estimated %v, want 0.25 logged", s.Iota, s.IotaEstimated)
	}
	// τ_1 ∈ {(x,l),(x,r)}; τ_2 ∈ {(x,l,y,r),(x,l,x,l),(x,r,<end>,<end>)}.
	if want := []int{2, 3}; !slices.Equal(s.Histories, want) {
		t.Errorf("Histories = %v, want %v", s.Histories, want)
	}

	// Without propensities: at (h=1, o=x) l was logged 2 times of 3.
	d.Propensity = nil
	s = Summarize(d)
	if s.Propensity != nil || !s.IotaEstimated || !near(s.Iota, 1.0/3) {
		t.Errorf("estimated iota %v (%v), want 1/3", s.Iota, s.IotaEstimated)
	}
}

// TestDistinctHistoriesBruteForce compares with string keys of prefixes.
func TestDistinctHistoriesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const K, H, nO, nA = 3000, 5, 3, 2
	d := &Dataset{Horizon: H, ObsVocab: make([]string, nO), ActVocab: make([]string, nA),
		Obs: make([]uint16, K*H), Act: make([]uint16, K*H)}
	for i := range d.Obs {
		d.Obs[i], d.Act[i] = uint16(rng.IntN(nO)), uint16(rng.IntN(nA))
	}
	got := DistinctHistories(d)
	for h := 1; h <= H; h++ {
		set := map[string]bool{}
		for k := range K {
			b := []byte{}
			for j := range h {
				b = append(b, byte(d.Obs[k*H+j]), byte(d.Act[k*H+j]))
			}
			set[string(b)] = true
		}
		if got[h-1] != len(set) {
			t.Errorf("h=%d: %d distinct histories, brute force %d", h, got[h-1], len(set))
		}
	}
}

func TestQuantilesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 7, 1000, 100000} {
		vals := make([]float64, n)
		for i := range vals {
			switch {
			case n == 100000 && i%2 == 0:
				vals[i] = 0.1 * float64(1+rng.IntN(4)) // few distinct propensities
			case n == 100000:
				vals[i] = rng.Float64() // same top bits: every digit level
			default:
				vals[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4))
			}
			if i%5 == 0 {
				vals[i] = 0.5 // ties
			}
		}
		qs := []float64{0, 0.01, 0.05, 0.25, 0.5, 0.9, 1}
		got := quantiles(vals, qs)
		// The streaming selection sees the values in segments of
		// random lengths, as Summarize passes episodes.
		segs := func(visit func([]float64)) {
			for i := 0; i < len(vals); {
				j := min(len(vals), i+rng.IntN(12))
				visit(vals[i:j])
				i = j
			}
		}
		streamed := streamQuantiles(len(vals), segs, qs)
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		for i, q := range qs {
			want := sorted[int(math.Floor(q*float64(n-1)))]
			if got[i] != want {
				t.Errorf("n=%d q=%v: %v, want %v", n, q, got[i], want)
			}
			if streamed[i] != want {
				t.Errorf("n=%d q=%v: streamed %v, want %v", n, q, streamed[i], want)
			}
		}
	}
}

// fewQuantiles counts distinct values; on logs with few distinct
// propensities it must agree with sorting, and it must decline (ok false)
// when there are too many distinct values or a value is not positive.
func TestFewQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	qs := []float64{0, 0.01, 0.05, 0.25, 0.5, 0.9, 1}
	for _, n := range []int{1, 3, 1000, 50000} {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(1+rng.IntN(20)) / 20 // 20 distinct values
		}
		segs := func(visit func([]float64)) {
			for i := 0; i < len(vals); i += 7 {
				visit(vals[i:min(len(vals), i+7)])
			}
		}
		got, ok := fewQuantiles(n, segs, qs, fewDistinct)
		if !ok {
			t.Fatalf("n=%d: declined 20 distinct values", n)
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		for i, q := range qs {
			if want := sorted[int(math.Floor(q*float64(n-1)))]; got[i] != want {
				t.Errorf("n=%d q=%v: %v, want %v", n, q, got[i], want)
			}
		}
		if _, ok := fewQuantiles(n, segs, qs, 19); ok && n >= 1000 {
			t.Errorf("n=%d: accepted 20 distinct values with room for 19", n)
		}
	}
	neg := func(visit func([]float64)) { visit([]float64{0.5, -0.5}) }
	if _, ok := fewQuantiles(2, neg, qs, fewDistinct); ok {
		t.Error("accepted a negative value")
	}
}

// ReturnRange: returns −1.5 (−2 + 0.5) and 3 (1 + 2), by hand;
// no episode gives the empty range.
func TestReturnRange(t *testing.T) {
	d := &Dataset{Horizon: 2, EpisodeIDs: []string{"a", "b"}, Obs: make([]uint16, 4), Act: make([]uint16, 4), Reward: []float64{-2, 0.5, 1, 2}}
	if lo, hi := d.ReturnRange(); lo != -1.5 || hi != 3 {
		t.Errorf("ReturnRange = %v, %v; want -1.5, 3", lo, hi)
	}
	if lo, hi := (&Dataset{Horizon: 2}).ReturnRange(); !math.IsInf(lo, 1) || !math.IsInf(hi, -1) {
		t.Errorf("empty: %v, %v", lo, hi)
	}
}

// quantiles returns, for each q, the order statistic of rank
// floor(q·(n−1)) of vals (NaN when vals is empty), by streamQuantiles over
// vals as one segment.
func quantiles(vals []float64, qs []float64) []float64 {
	return streamQuantiles(len(vals), func(visit func([]float64)) { visit(vals) }, qs)
}

// TestDistinctHistoriesGroupsMatchRadix compares the grouping count with
// the radix numbering on logs with padding, skewed symbols (groups of
// every size) and a stamp counter about to start over.
func TestDistinctHistoriesGroupsMatchRadix(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for trial := range 40 {
		K, H := 1+rng.IntN(4000), 1+rng.IntN(9)
		nO, nA := 1+rng.IntN(6), 1+rng.IntN(4)
		d := &Dataset{Horizon: H, ObsVocab: make([]string, nO), ActVocab: make([]string, nA),
			Obs: make([]uint16, K*H), Act: make([]uint16, K*H), Length: make([]int32, K)}
		for k := range K {
			L := H
			if rng.IntN(3) == 0 {
				L = 1 + rng.IntN(H)
			}
			d.Length[k] = int32(L)
			for h := range H {
				i := k*H + h
				if h >= L { // padding: the last codes stand for the end symbol
					d.Obs[i], d.Act[i] = uint16(nO-1), uint16(nA-1)
					continue
				}
				d.Obs[i] = uint16(min(rng.IntN(nO), rng.IntN(nO))) // skewed
				d.Act[i] = uint16(rng.IntN(nA))
			}
		}
		want := distinctByRadix(d)
		g := newHistoryGroups(K, nO*nA, nA)
		if trial%2 == 1 {
			g.serial = math.MaxInt32 - int32(rng.IntN(3))
		}
		for h := range H {
			if got := g.step(d, h); got != want[h] {
				t.Fatalf("trial %d (K=%d, H=%d): step %d has %d distinct histories, radix %d", trial, K, H, h+1, got, want[h])
			}
		}
		if got := DistinctHistories(d); !slices.Equal(got, want) {
			t.Fatalf("trial %d: DistinctHistories %v, radix %v", trial, got, want)
		}
		// The id table handing over to the groups at every step.
		for _, cells := range []int{0, nO * nA, 8 * nO * nA, 64 * nO * nA} {
			if got := distinctHistories(d, cells); !slices.Equal(got, want) {
				t.Fatalf("trial %d, table of %d cells: %v, radix %v", trial, cells, got, want)
			}
		}
	}
}

// TestDistinctByPathsWidths: the sorted-keys count equals the radix
// numbering's where the keys fill all 64 bits (16 codes of 4 bits), with
// one code, one episode and padded episodes, and gives way past 64 bits.
func TestDistinctByPathsWidths(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ K, H, nO, nA int }{
		{5000, 16, 4, 4}, {3000, 8, 16, 16}, {4000, 21, 2, 3}, {500, 6, 1, 1}, {1, 4, 3, 2}, {2000, 1, 5, 5},
	} {
		d := &Dataset{Horizon: c.H, ObsVocab: make([]string, c.nO), ActVocab: make([]string, c.nA),
			Obs: make([]uint16, c.K*c.H), Act: make([]uint16, c.K*c.H), Length: make([]int32, c.K)}
		for k := range c.K {
			L := c.H - rng.IntN(2)*rng.IntN(c.H) // some end early: padded with the last codes
			d.Length[k] = int32(L)
			for h := range c.H {
				i := k*c.H + h
				d.Obs[i], d.Act[i] = uint16(c.nO-1), uint16(c.nA-1)
				if h < L {
					d.Obs[i] = uint16(min(rng.IntN(c.nO), rng.IntN(c.nO)))
					d.Act[i] = uint16(rng.IntN(c.nA))
				}
			}
		}
		got, ok := distinctByPaths(d)
		if !ok {
			t.Fatalf("%+v: keys of %d bits refused", c, c.H*max(1, bits.Len(uint(c.nO*c.nA-1))))
		}
		if want := distinctByRadix(d); !slices.Equal(got, want) {
			t.Fatalf("%+v: sorted keys %v, radix %v", c, got, want)
		}
	}
	wide := &Dataset{Horizon: 13, ObsVocab: make([]string, 17), ActVocab: make([]string, 1), Obs: make([]uint16, 13), Act: make([]uint16, 13)}
	if _, ok := distinctByPaths(wide); ok {
		t.Fatal("13 codes of 5 bits (65) taken")
	}
	if got := DistinctHistories(&Dataset{Horizon: 3, ObsVocab: []string{"o"}, ActVocab: []string{"a"}}); !slices.Equal(got, []int{0, 0, 0}) {
		t.Fatalf("no episodes: %v", got)
	}
}

// TestReadSummaryMatches: ReadSummary, which tallies the propensities on
// the direct path instead of storing them, gives the Summary of
// Summarize(Read(...)): with few and with many (more than fewDistinct)
// distinct propensities, dictionary-encoded, plain, or both in one read,
// with episodes that end early, without a propensity column, and on
// logs only the exact path reads (skip mode with an invalid episode).
func TestReadSummaryMatches(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(31, 32))
	// write writes K episodes of up to 4 steps whose propensities take
	// m values, the column dictionary-encoded when dict.
	write := func(name string, K, m int, dict, withProp bool, bad bool) string {
		tb := logTable(withProp, true)
		if withProp && dict {
			tb.nodes[5] = parquet.Encoded(parquet.Leaf(parquet.DoubleType), &parquet.RLEDictionary)
		}
		for k := range K {
			L := 4 - rng.IntN(2)*rng.IntN(4)
			for h := 1; h <= L; h++ {
				r := []any{fmt.Sprintf("%s-%d", name, k), int64(h), fmt.Sprint("o", rng.IntN(3)), fmt.Sprint("a", rng.IntN(2)), rng.NormFloat64()}
				if withProp {
					r = append(r, float64(1+rng.IntN(m))/float64(m))
				}
				tb.add(append(r, h == L && L < 4)...)
			}
		}
		if bad {
			r := []any{name + "-bad", int64(2), "o0", "a0", 0.0}
			if withProp {
				r = append(r, 0.5)
			}
			tb.add(append(r, false)...)
		}
		return tb.write(t, filepath.Join(dir, name+".parquet"), 97)
	}
	cases := []struct {
		name  string
		files []string
		opts  Options
	}{
		{"few, dictionary", []string{write("few", 300, 4, true, true, false)}, Options{}},
		{"many, dictionary", []string{write("many", 300, 300, true, true, false)}, Options{}},
		{"few, plain", []string{write("plain", 300, 4, false, true, false)}, Options{}},
		{"dictionary and plain", []string{write("d1", 200, 5, true, true, false), write("p1", 200, 5, false, true, false)}, Options{}},
		{"many, dictionary and plain", []string{write("d2", 200, 300, true, true, false), write("p2", 200, 300, false, true, false)}, Options{}},
		{"no propensities", []string{write("none", 200, 1, false, false, false)}, Options{}},
		{"exact path", []string{write("skip", 200, 4, true, true, true)}, Options{OnInvalid: OnInvalidSkip}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Read(context.Background(), c.files, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := Summarize(d)
			for _, w := range []int{1, 2} {
				opts := c.opts
				opts.Workers = w
				got, err := ReadSummary(context.Background(), c.files, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("workers=%d:\nReadSummary %+v\nSummarize   %+v", w, got, want)
				}
			}
			if c.opts.OnInvalid == "" && want.Propensity != nil {
				var tl propTally // the direct path tallied, without an array
				if d := readDirectTally(t, c.files, c.opts, &tl); !tl.counted || d.Propensity != nil || tl.n() != int(want.LoggedRows) {
					t.Fatalf("direct path: counted %v, array %v, %d values of %d", tl.counted, d.Propensity != nil, tl.n(), want.LoggedRows)
				}
			}
		})
	}
}
