package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/ingest/synth"
)

// readExact reads files on the exact path only.
func readExact(t *testing.T, files []string, opts Options) (*Dataset, error) {
	t.Helper()
	directPath = false
	defer func() { directPath = true }()
	return Read(context.Background(), files, opts)
}

// readDirectOnly reads files on the direct path and fails the test when
// that path gives up.
func readDirectOnly(t *testing.T, files []string, opts Options) *Dataset {
	return readDirectTally(t, files, opts, nil)
}

// readDirectTally is readDirectOnly tallying the propensities into tl
// when it is not nil.
func readDirectTally(t *testing.T, files []string, opts Options, tl *propTally) *Dataset {
	t.Helper()
	srcs := make([]source, len(files))
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		srcs[i] = source{name: name, r: f, size: st.Size()}
	}
	of, units, err := openSources(srcs, opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := readDirect(context.Background(), of, units, opts, tl)
	if err != nil {
		t.Fatalf("direct path: %v", err)
	}
	return d
}

// TestDirectMatchesExact: on valid logs of many layouts (shuffled rows
// over several files and row groups, dictionary and plain pages, string
// and integer symbols, early ends, given or inferred horizon) the direct
// path succeeds and gives exactly the Dataset of the exact path, with 1 or
// 2 workers.
func TestDirectMatchesExact(t *testing.T) {
	type input struct {
		name  string
		files []string
		opts  Options
	}
	var inputs []input
	dir := t.TempDir()
	for i, c := range []struct {
		K, H, nFiles, rowGroup int
		dict                   bool
	}{{40, 5, 1, 0, false}, {60, 4, 3, 7, true}, {30, 1, 2, 5, false}, {50, 12, 2, 33, true}} {
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		sub := filepath.Join(dir, fmt.Sprint(i))
		os.Mkdir(sub, 0o755)
		eps := genEpisodes(rng, c.K, c.H)
		files := writeEpisodes(t, rng, sub, eps, c.nFiles, c.rowGroup, c.dict)
		inputs = append(inputs, input{fmt.Sprintf("gen-%d", i), files, Options{}})
		inputs = append(inputs, input{fmt.Sprintf("gen-%d-H", i), files, Options{Horizon: c.H, OnInvalid: OnInvalidSkip}})
	}
	ints := &table{}
	ints.col("episode_id", parquet.Int(64)).col("step", parquet.Encoded(parquet.Int(32), &parquet.RLEDictionary)).
		col("observation", parquet.Encoded(parquet.Int(64), &parquet.RLEDictionary)).col("action", parquet.Int(32)).
		col("reward", parquet.Leaf(parquet.FloatType)).col("propensity", parquet.Optional(parquet.Leaf(parquet.DoubleType)))
	for e := range 25 {
		for h := 1; h <= 3; h++ {
			ints.add(int64(7*(25-e)), int32(h), int64((e*h)%11-4), int32(e%3), float32(h)/4, 0.5)
		}
	}
	inputs = append(inputs, input{"ints", []string{ints.write(t, filepath.Join(dir, "ints.parquet"), 20)}, Options{}})
	syn := filepath.Join(dir, "synth.parquet")
	if err := synth.Write(syn, synth.Options{Episodes: 500, RowGroups: 3}); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, input{"synth", []string{syn}, Options{}})
	for _, f := range []string{"duckdb_strings.parquet", "duckdb_ints.parquet"} {
		inputs = append(inputs, input{f, []string{filepath.Join("testdata", f)}, Options{}})
	}

	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			want, err := readExact(t, in.files, in.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []int{1, 2} {
				opts := in.opts
				opts.Workers = w
				got := readDirectOnly(t, in.files, opts)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("workers=%d: direct path differs from exact path:\n%+v\n%+v", w, got, want)
				}
			}
		})
	}
}
