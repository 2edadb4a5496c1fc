package split

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/ingest"
)

func TestSplitPartition(t *testing.T) {
	for _, tc := range []struct{ k, h int }{{0, 3}, {1, 3}, {10, 1}, {10, 3}, {101, 7}, {5, 8}} {
		s, err := Split(tc.k, tc.h, 42)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != tc.h {
			t.Fatalf("K=%d H=%d: %d subsets", tc.k, tc.h, len(s))
		}
		seen := make([]bool, tc.k)
		for h, sub := range s {
			// Round-robin deal: the first K mod H subsets get one more.
			want := tc.k / tc.h
			if h < tc.k%tc.h {
				want++
			}
			if len(sub) != want {
				t.Errorf("K=%d H=%d: |D_%d| = %d, want %d", tc.k, tc.h, h, len(sub), want)
			}
			if !slices.IsSorted(sub) {
				t.Errorf("D_%d not sorted", h)
			}
			for _, k := range sub {
				if seen[k] {
					t.Errorf("episode %d in two subsets", k)
				}
				seen[k] = true
			}
		}
		if slices.Contains(seen, false) {
			t.Errorf("K=%d H=%d: an episode is in no subset", tc.k, tc.h)
		}
	}
	if _, err := Split(3, 0, 1); err == nil {
		t.Error("horizon 0 accepted")
	}
}

func TestSplitSeeded(t *testing.T) {
	a, _ := Split(1000, 5, 7)
	b, _ := Split(1000, 5, 7)
	c, _ := Split(1000, 5, 8)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different split")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds, same split")
	}
	// The shuffle is uniform enough that each subset mixes low and high
	// indexes: with 1000 episodes a subset holding only the lower half has
	// probability far below 1e-50.
	for h, s := range a {
		if s[len(s)-1] < 500 || s[0] >= 500 {
			t.Errorf("D_%d = [%d..%d] is not mixed", h, s[0], s[len(s)-1])
		}
	}
}

// TestSplitIndependentOfFiles writes the same rows as 1 and 4 files in
// different orders: ingest + split give the same subsets of episode ids.
func TestSplitIndependentOfFiles(t *testing.T) {
	type row struct {
		id   string
		step int64
	}
	var rows []row
	for k := range 60 {
		for h := int64(1); h <= 3; h++ {
			rows = append(rows, row{fmt.Sprintf("ep%02d", k), h})
		}
	}
	write := func(dir string, nFiles int, shuffle uint64) []string {
		rs := slices.Clone(rows)
		rand.New(rand.NewPCG(shuffle, 0)).Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		var files []string
		for f := range nFiles {
			type logRow struct {
				EpisodeID   string  `parquet:"episode_id"`
				Step        int64   `parquet:"step"`
				Observation string  `parquet:"observation"`
				Action      string  `parquet:"action"`
				Reward      float64 `parquet:"reward"`
			}
			var out []logRow
			for i := f; i < len(rs); i += nFiles {
				out = append(out, logRow{rs[i].id, rs[i].step, "o", "a", 1})
			}
			path := filepath.Join(dir, fmt.Sprintf("z%d.parquet", nFiles-f))
			if err := parquet.WriteFile(path, out); err != nil {
				t.Fatal(err)
			}
			files = append(files, path)
		}
		return files
	}
	subsetsOfIDs := func(files []string) [][]string {
		d, err := ingest.Read(context.Background(), files, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Split(d.NumEpisodes(), d.Horizon, 99)
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]string, len(s))
		for h, sub := range s {
			for _, k := range sub {
				out[h] = append(out[h], d.EpisodeIDs[k])
			}
		}
		return out
	}
	a := subsetsOfIDs(write(t.TempDir(), 1, 1))
	b := subsetsOfIDs(write(t.TempDir(), 4, 2))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("split differs with the file layout:\n%v\n%v", a, b)
	}
}

func TestOf(t *testing.T) {
	s, _ := Split(10, 3, 1)
	of := Of(s, 10)
	for h, sub := range s {
		for _, k := range sub {
			if of[k] != h {
				t.Errorf("Of[%d] = %d, want %d", k, of[k], h)
			}
		}
	}
}
