package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// goodRows adds two valid episodes of 3 steps.
func goodRows(tb *table, withProp, withTerm bool) *table {
	for _, id := range []string{"e1", "e2"} {
		for h := int64(1); h <= 3; h++ {
			r := []any{id, h, "o", "a", 1.0}
			if withProp {
				r = append(r, 0.5)
			}
			if withTerm {
				r = append(r, false)
			}
			tb.add(r...)
		}
	}
	return tb
}

func TestInvalidEpisodes(t *testing.T) {
	optObs := func(tb *table) *table { tb.nodes[2] = parquet.Optional(parquet.String()); return tb }
	// dictSteps stores the steps as dictionary indexes, which are read
	// by checking each dictionary entry once.
	dictSteps := func(tb *table) *table {
		tb.nodes[1] = parquet.Encoded(parquet.Int(64), &parquet.RLEDictionary)
		return tb
	}
	cases := []struct {
		name    string
		files   func() []*table // rows of the episode "bad" are added here
		opts    Options
		err     error
		want    []string // substrings of the message
		skipped int      // episodes quarantined in skip mode
	}{
		{"duplicate step across files", func() []*table {
			a := goodRows(logTable(true, false), true, false).add("bad", int64(1), "o", "a", 0.0, 0.5).add("bad", int64(2), "o", "a", 0.0, 0.5)
			b := logTable(true, false).add("bad", int64(2), "o", "a", 0.0, 0.5).add("bad", int64(3), "o", "a", 0.0, 0.5)
			return []*table{a, b}
		}, Options{}, ErrDuplicateStep, []string{`f1.parquet: episode "bad" step 2: duplicate step (also in `, "f0.parquet)"}, 1},
		{"duplicate step in one file", func() []*table {
			return []*table{goodRows(logTable(true, false), true, false).add("bad", int64(1), "o", "a", 0.0, 0.5).add("bad", int64(1), "o", "a", 0.0, 0.5)}
		}, Options{}, ErrDuplicateStep, []string{`episode "bad" step 1: duplicate step (twice in this file)`}, 1},
		{"gap", func() []*table {
			return []*table{goodRows(logTable(true, false), true, false).add("bad", int64(1), "o", "a", 0.0, 0.5).add("bad", int64(3), "o", "a", 0.0, 0.5)}
		}, Options{}, ErrStepGap, []string{`episode "bad" step 2: gap in steps`}, 1},
		{"too long for the horizon", func() []*table {
			return []*table{goodRows(logTable(true, false), true, false).add("ok", int64(1), "o", "a", 0.0, 0.5).add("ok", int64(2), "o", "a", 0.0, 0.5)}
		}, Options{Horizon: 2}, ErrTooLong, []string{`episode "e1" step 3: episode longer than the horizon (horizon 2)`}, 2},
		{"short without terminal", func() []*table {
			return []*table{goodRows(logTable(true, true), true, true).add("bad", int64(1), "o", "a", 0.0, 0.5, false)}
		}, Options{}, ErrShortEpisode, []string{`episode "bad" step 1: episode shorter than the horizon`}, 1},
		{"terminal before the last step", func() []*table {
			return []*table{goodRows(logTable(true, true), true, true).add("bad", int64(1), "o", "a", 0.0, 0.5, true).add("bad", int64(2), "o", "a", 0.0, 0.5, false)}
		}, Options{}, ErrTerminal, []string{`episode "bad" step 1: terminal before the last step`}, 1},
		{"propensity zero", func() []*table {
			return []*table{goodRows(logTable(true, false), true, false).add("bad", int64(2), "o", "a", 0.0, 0.0)}
		}, Options{}, ErrPropensity, []string{`episode "bad" step 2: propensity not in (0,1] (0)`}, 1},
		{"propensity above one", func() []*table {
			return []*table{goodRows(logTable(true, false), true, false).add("bad", int64(2), "o", "a", 0.0, 1.5)}
		}, Options{}, ErrPropensity, []string{`step 2: propensity not in (0,1] (1.5)`}, 1},
		{"propensity NaN", func() []*table {
			return []*table{goodRows(logTable(true, false), true, false).add("bad", int64(3), "o", "a", 0.0, math.NaN())}
		}, Options{}, ErrPropensity, []string{`step 3: propensity not in (0,1] (NaN)`}, 1},
		{"reward NaN", func() []*table {
			return []*table{goodRows(logTable(false, false), false, false).add("bad", int64(1), "o", "a", math.NaN())}
		}, Options{}, ErrReward, []string{`episode "bad" step 1: reward not finite (NaN)`}, 1},
		{"reward Inf", func() []*table {
			return []*table{goodRows(logTable(false, false), false, false).add("bad", int64(1), "o", "a", math.Inf(-1))}
		}, Options{}, ErrReward, []string{`reward not finite (-Inf)`}, 1},
		{"reward too large", func() []*table {
			return []*table{goodRows(logTable(false, false), false, false).add("bad", int64(1), "o", "a", -1e300)}
		}, Options{}, ErrRewardRange, []string{`f0.parquet: episode "bad" step 1: reward beyond ±1e+100 (-1e+300; rescale`}, 1},
		{"step zero", func() []*table {
			return []*table{goodRows(logTable(false, false), false, false).add("bad", int64(0), "o", "a", 0.0)}
		}, Options{}, ErrStep, []string{`episode "bad": step out of range (0; steps start at 1)`}, 1},
		{"step zero in a dictionary", func() []*table {
			return []*table{dictSteps(goodRows(logTable(false, false), false, false)).add("bad", int64(1), "o", "a", 0.0).add("bad", int64(0), "o", "a", 0.0)}
		}, Options{}, ErrStep, []string{`episode "bad": step out of range (0; steps start at 1)`}, 1},
		{"dictionary steps too long for the horizon", func() []*table {
			return []*table{dictSteps(goodRows(logTable(false, false), false, false)).add("ok", int64(1), "o", "a", 0.0).add("ok", int64(2), "o", "a", 0.0)}
		}, Options{Horizon: 2}, ErrTooLong, []string{`episode "e1" step 3: episode longer than the horizon (horizon 2)`}, 2},
		{"null observation", func() []*table {
			return []*table{optObs(goodRows(logTable(false, false), false, false)).add("bad", int64(2), nil, "a", 0.0)}
		}, Options{}, ErrNull, []string{`episode "bad" step 2: null value in column "observation"`}, 1},
		{"null episode id", func() []*table {
			tb := goodRows(logTable(false, false), false, false).add(nil, int64(2), "o", "a", 0.0)
			tb.nodes[0] = parquet.Optional(parquet.String())
			return []*table{tb}
		}, Options{}, ErrNull, []string{`row 6: null value in column "episode_id"`}, 1},
		{"null episode id on several rows", func() []*table {
			tb := goodRows(logTable(false, false), false, false)
			for h := int64(1); h <= 3; h++ {
				tb.add(nil, h, "o", "a", 0.0)
			}
			tb.nodes[0] = parquet.Optional(parquet.String())
			return []*table{tb}
		}, Options{}, ErrNull, []string{`row 6: null value in column "episode_id" (3 rows in all have a null episode_id)`}, 1},
		{"reserved symbol", func() []*table {
			return []*table{goodRows(logTable(false, false), false, false).add("bad", int64(1), EndSymbol, "a", 0.0)}
		}, Options{}, ErrReservedSymbol, []string{`episode "bad" step 1: reserved symbol "<end>"`}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var files []string
			for i, tb := range tc.files() {
				files = append(files, tb.write(t, filepath.Join(dir, "f"+string(rune('0'+i))+".parquet"), 0))
			}
			_, err := Read(context.Background(), files, tc.opts)
			if !errors.Is(err, tc.err) || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrIO) {
				t.Fatalf("err = %v, want %v wrapping ErrInvalid", err, tc.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err, w)
				}
			}
			opts := tc.opts
			opts.OnInvalid = OnInvalidSkip
			d, err := Read(context.Background(), files, opts)
			if err != nil {
				t.Fatalf("skip mode: %v", err)
			}
			if len(d.Quarantined) != tc.skipped {
				t.Fatalf("skip mode: %d quarantined (%+v), want %d", len(d.Quarantined), d.Quarantined, tc.skipped)
			}
			q := d.Quarantined[0]
			if !strings.Contains(tc.want[0], q.Reason[:min(len(q.Reason), 12)]) || q.File == "" {
				t.Errorf("quarantine entry %+v does not match %q", q, tc.want[0])
			}
			// The two good episodes and "bad" (or a null-id row) are all
			// accounted for.
			if kept := d.NumEpisodes(); kept+tc.skipped != 3 {
				t.Errorf("kept %d episodes, quarantined %d, want 3 in all", kept, tc.skipped)
			}
			for _, id := range d.EpisodeIDs {
				if id == "bad" {
					t.Error(`episode "bad" kept in skip mode`)
				}
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	good := goodRows(logTable(true, false), true, false).write(t, filepath.Join(dir, "good.parquet"), 0)
	noProp := goodRows(logTable(false, false), false, false).write(t, filepath.Join(dir, "noprop.parquet"), 0)
	tb := &table{}
	tb.col("episode_id", parquet.String()).col("step", parquet.Int(64)).col("observation", parquet.String()).col("action", parquet.String())
	missing := tb.add("a", int64(1), "o", "a").write(t, filepath.Join(dir, "missing.parquet"), 0)
	tb = &table{}
	tb.col("episode_id", parquet.String()).col("step", parquet.String()).col("observation", parquet.String()).
		col("action", parquet.String()).col("reward", parquet.Leaf(parquet.DoubleType))
	mistyped := tb.add("a", "one", "o", "a", 1.0).write(t, filepath.Join(dir, "mistyped.parquet"), 0)
	amb := logTable(true, false).col("pscore", parquet.Leaf(parquet.DoubleType))
	ambiguous := amb.add("a", int64(1), "o", "a", 1.0, 0.5, 0.5).write(t, filepath.Join(dir, "ambiguous.parquet"), 0)
	empty := logTable(false, false).write(t, filepath.Join(dir, "empty.parquet"), 0)
	empty2 := logTable(false, false).write(t, filepath.Join(dir, "empty2.parquet"), 0)
	garbage := filepath.Join(dir, "garbage.parquet")
	os.WriteFile(garbage, []byte("episode_id,step\n1,1\n"), 0o644)
	raw, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "truncated.parquet")
	os.WriteFile(truncated, raw[:len(raw)/2], 0o644)
	// A damaged footer length: the magic bytes are intact.
	badFooter := filepath.Join(dir, "badfooter.parquet")
	bf := append([]byte(nil), raw...)
	bf[len(bf)-6] = 0x7f
	os.WriteFile(badFooter, bf, 0o644)

	cases := []struct {
		name  string
		files []string
		err   error
		want  string
	}{
		{"missing column", []string{missing}, ErrMissingColumn, "missing.parquet: missing column: no reward column"},
		{"mistyped column", []string{mistyped}, ErrColumnType, `column "step" (step) is`},
		{"ambiguous alias", []string{ambiguous}, ErrAmbiguousColumn, `both "propensity" and "pscore"`},
		{"propensity in one file only", []string{good, noProp}, ErrMissingColumn, "noprop.parquet: missing column: no propensity column, but"},
		{"empty", []string{empty}, ErrEmpty, "empty.parquet holds no rows"},
		{"two empty", []string{empty, empty2}, ErrEmpty, "the 2 input files (" + empty + ", " + empty2 + ") hold no rows"},
		{"not parquet", []string{garbage}, ErrUnreadable, "garbage.parquet: not a readable Parquet file"},
		{"truncated", []string{good, truncated}, ErrUnreadable, "truncated.parquet: not a readable Parquet file"},
		{"bad footer length", []string{badFooter}, ErrUnreadable, "badfooter.parquet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{OnInvalidFail, OnInvalidSkip} {
				_, err := Read(context.Background(), tc.files, Options{OnInvalid: mode})
				if !errors.Is(err, tc.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("%s: err = %v, want %v", mode, err, tc.err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: message %q does not contain %q", mode, err, tc.want)
				}
			}
		})
	}

	_, err := Read(context.Background(), []string{filepath.Join(dir, "absent.parquet")}, Options{})
	if !errors.Is(err, ErrIO) || errors.Is(err, ErrInvalid) {
		t.Errorf("absent file: err = %v, want ErrIO only", err)
	}
	if _, err := Read(context.Background(), []string{good}, Options{OnInvalid: "ignore"}); err == nil {
		t.Error("bad OnInvalid accepted")
	}
}

func TestFailReportsCount(t *testing.T) {
	tb := goodRows(logTable(false, false), false, false).
		add("x1", int64(1), "o", "a", math.NaN()).add("x2", int64(1), "o", "a", math.NaN())
	_, err := Read(context.Background(), []string{tb.write(t, tmpPath(t, "two.parquet"), 0)}, Options{})
	// x1 and x2 have a NaN reward (they are also short: the first
	// problem found is the one reported); e1 and e2 are valid.
	if err == nil || !strings.Contains(err.Error(), `episode "x1" step 1: reward not finite (NaN) (and 1 more invalid episodes`) {
		t.Errorf("message: %v", err)
	}
	var ee *EpisodeError
	if !errors.As(err, &ee) || ee.Episode != "x1" || ee.More != 1 {
		t.Errorf("err = %v, want the first invalid episode x1 and 1 more", err)
	}
}

func TestCancelled(t *testing.T) {
	path := goodRows(logTable(false, false), false, false).write(t, tmpPath(t, "c.parquet"), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, []string{path}, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// When every episode is invalid (here the only one, skipped), the message
// says so and does not start with "no rows": the file has rows.
func TestAllEpisodesInvalid(t *testing.T) {
	tb := logTable(false, false)
	for _, id := range []string{"x1", "x2"} {
		for h := int64(1); h <= 3; h++ {
			tb.add(id, h, "o", "a", math.NaN())
		}
	}
	_, err := Read(context.Background(), []string{tb.write(t, tmpPath(t, "bad.parquet"), 0)}, Options{OnInvalid: OnInvalidSkip})
	if !errors.Is(err, ErrEmpty) || strings.HasPrefix(err.Error(), "no rows") || !strings.Contains(err.Error(), "no valid episodes: all 2 episodes are invalid") {
		t.Errorf("err = %v", err)
	}
}

// TestSymbolLimit: a column may hold MaxSymbols−1 = 65,534 distinct
// symbols, as the README and every message say; one more is a data error
// that states the same number.
func TestSymbolLimit(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{MaxSymbols - 1, MaxSymbols} {
		tb := logTable(false, false)
		for i := range n {
			tb.add(fmt.Sprint(i), int64(1), fmt.Sprint("o", i), "a", 0.0)
		}
		file := tb.write(t, filepath.Join(dir, fmt.Sprint(n, ".parquet")), 0)
		_, err := Read(context.Background(), []string{file}, Options{})
		if n < MaxSymbols {
			if err != nil {
				t.Fatalf("%d observations: %v", n, err)
			}
			continue
		}
		if !errors.Is(err, ErrTooManySymbols) || !strings.Contains(err.Error(), "65534") {
			t.Fatalf("%d observations: %v, want ErrTooManySymbols naming 65534", n, err)
		}
	}
}
