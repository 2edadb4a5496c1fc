package ingest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// fuzzSeeds are valid files of several layouts.
func fuzzSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	var seeds [][]byte
	add := func(tb *table, rowGroup int) {
		p := tb.write(f, filepath.Join(dir, "seed.parquet"), rowGroup)
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	add(goodRows(logTable(true, true), true, true), 0)
	dict := goodRows(logTable(true, false), true, false).add("x", int64(1), "o", "a", 1.0, 0.5)
	dict.nodes[0] = parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary))
	dict.nodes[2] = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
	add(dict, 2)
	ints := &table{}
	ints.col("episode_id", parquet.Int(64)).col("step", parquet.Encoded(parquet.Int(32), &parquet.RLEDictionary)).
		col("observation", parquet.Int(64)).col("action", parquet.Optional(parquet.Int(32))).col("reward", parquet.Leaf(parquet.FloatType))
	ints.add(int64(1), int32(1), int64(3), int32(4), float32(1)).add(int64(1), int32(2), int64(3), nil, float32(2))
	add(ints, 1)
	return seeds
}

// FuzzIngest: any bytes give a dataset or an error, never a panic, and a
// dataset that is returned satisfies the Dataset invariants.
func FuzzIngest(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
		f.Add(s[:len(s)/2])              // truncated
		f.Add(s[:len(s)-1])              // last byte missing
		f.Add(append(s[:0:0], s[4:]...)) // header missing
		for _, at := range []int{4, 8, 20, len(s) / 3, len(s) - 12, len(s) - 9} {
			c := bytes.Clone(s)
			c[at] ^= 0xA5 // corrupted
			f.Add(c)
		}
	}
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mode := range []string{OnInvalidFail, OnInvalidSkip} {
			src := source{name: "fuzz.parquet", r: bytes.NewReader(data), size: int64(len(data))}
			d, err := readSources(context.Background(), []source{src}, Options{OnInvalid: mode}, nil)
			if err != nil {
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrIO) {
					t.Fatalf("error outside ErrInvalid/ErrIO: %v", err)
				}
				continue
			}
			checkInvariants(t, d)
			// The summary's reader (propensities tallied, ids not
			// rendered) gives the same Summary, never a panic.
			var tl propTally
			src = source{name: "fuzz.parquet", r: bytes.NewReader(data), size: int64(len(data))}
			ds, err := readSources(context.Background(), []source{src}, Options{OnInvalid: mode}, &tl)
			if err != nil {
				t.Fatalf("the summary's read failed where Read did not: %v", err)
			}
			if got, want := summarize(ds, &tl), Summarize(d); !reflect.DeepEqual(got, want) {
				t.Fatalf("summary's read %+v, Read %+v", got, want)
			}
		}
	})
}

func checkInvariants(t *testing.T, d *Dataset) {
	t.Helper()
	K, H := d.NumEpisodes(), d.Horizon
	if K == 0 || H < 1 || len(d.Obs) != K*H || len(d.Act) != K*H || len(d.Reward) != K*H ||
		len(d.EpisodeIDs) != K || len(d.Length) != K || (d.Propensity != nil && len(d.Propensity) != K*H) {
		t.Fatalf("inconsistent shapes: K=%d H=%d", K, H)
	}
	for i := range d.Obs {
		if int(d.Obs[i]) >= len(d.ObsVocab) || int(d.Act[i]) >= len(d.ActVocab) {
			t.Fatalf("code out of range at %d", i)
		}
		if d.Propensity != nil && !(d.Propensity[i] > 0 && d.Propensity[i] <= 1) {
			t.Fatalf("propensity %v", d.Propensity[i])
		}
	}
	for k := 1; k < K; k++ {
		if d.EpisodeIDs[k] == d.EpisodeIDs[k-1] {
			t.Fatalf("duplicate episode id %q", d.EpisodeIDs[k])
		}
	}
	for k, L := range d.Length {
		if L < 1 || int(L) > H {
			t.Fatalf("episode %d length %d", k, L)
		}
	}
	Summarize(d)
}
