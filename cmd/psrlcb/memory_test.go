package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wideLogs are K episodes of H steps whose observations take vocab
// values (every value at least once while rows remain), with 3 actions.
func wideLogs(rng *rand.Rand, K, H, vocab int) logSpec {
	l := logSpec{propensity: true, intObs: true}
	n := 0
	for k := range K {
		for h := 1; h <= H; h++ {
			o := int64(n % vocab)
			if n >= vocab {
				o = rng.Int64N(int64(vocab))
			}
			n++
			a := rng.Int64N(3)
			r := 0.0
			if o%3 == a {
				r = 1
			}
			l.rows = append(l.rows, logRow{episode: int64(k), step: int64(h), obs: o, act: a, reward: r, prop: 1.0 / 3})
		}
	}
	return l
}

// peakHeap samples the live heap (what the last garbage collection kept)
// every millisecond until stop is called and returns the largest value
// seen: the memory the run holds, not the garbage between collections.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
		}
	}()
	return func() uint64 { close(done); return peak.Load() }
}

// TestWideVocabulariesUnderMemoryLimit drives every stage with
// vocabularies from 10 to 65,534 observations and ranks from 1 to past
// what the logs identify, under a memory limit far below the machine's:
// each run ends with exit 0 or 3 (a stated refusal), never a crash, and
// the heap stays under the limit. The largest vocabulary is in the logs
// of the fuzz cases' size class only with -short unset.
func TestWideVocabulariesUnderMemoryLimit(t *testing.T) {
	const limit = 192 << 20
	type tc struct {
		vocab, K int
		rank     string
	}
	cases := []tc{{10, 200, "auto"}, {10, 200, "1000"}, {2000, 600, "1"}, {2000, 600, "auto"}, {300, 600, "20"}, {8000, 2000, "auto"}}
	if !testing.Short() {
		cases = append(cases, tc{65534, 16384, "1"})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("vocab=%d/rank=%s", c.vocab, c.rank), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.vocab), 1))
			dir := t.TempDir()
			logs := wideLogs(rng, c.K, 4, c.vocab).write(t, filepath.Join(dir, "logs.parquet"))
			args := []string{"fit", logs, "--out", filepath.Join(dir, "run"), "--rank", c.rank, "--alpha", "0.1",
				"--restarts", "1", "--max-iter", "10", "--memory-limit", fmt.Sprint(limit), "--log-format", "json"}
			runtime.GC()
			stop := peakHeap()
			var out bytes.Buffer
			code, err := runMain(context.Background(), &out, &out, args...)
			peak := stop()
			if code != exitOK && code != exitData {
				t.Fatalf("exit %d: %v", code, err)
			}
			if code == exitData && !strings.Contains(err.Error(), "memory") {
				t.Errorf("refused for another reason than memory: %v", err)
			}
			if peak > limit {
				t.Errorf("peak heap %d MiB above the limit of %d MiB", peak>>20, limit>>20)
			}
			t.Logf("exit %d, peak heap %d MiB", code, peak>>20)
		})
	}
}
