package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/psrlcb/psrlcb/ingest/synth"
)

// benchFile returns the synthetic logs of the benchmark, generated once
// into os.TempDir()/psrlcb-bench: 1M episodes × 10 steps (10M rows), or
// PSRLCB_BENCH_ROWS rows, or 100k rows with -short.
func benchFile(b *testing.B) (string, int) {
	rows := 10_000_000
	if s := os.Getenv("PSRLCB_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 10 {
			b.Fatalf("PSRLCB_BENCH_ROWS=%q: want a number of rows ≥ 10", s)
		}
		rows = n
	} else if testing.Short() {
		rows = 100_000
	}
	episodes := rows / 10
	dir := filepath.Join(os.TempDir(), "psrlcb-bench")
	name := fmt.Sprintf("ingest-%dM.parquet", rows/1_000_000)
	if rows%1_000_000 != 0 {
		name = fmt.Sprintf("ingest-%d.parquet", rows)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, episodes * 10
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp := path + fmt.Sprintf(".%d.tmp", os.Getpid())
	if err := synth.Write(tmp, synth.Options{Episodes: episodes}); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path, episodes * 10
}

// peakHeap samples the live heap every millisecond until stop is called.
func peakHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkIngest reads the synthetic logs into a validated Dataset and
// reports rows/s and the peak live heap.
func BenchmarkIngest(b *testing.B) {
	path, rows := benchFile(b)
	st, _ := os.Stat(path)
	b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
		b.SetBytes(st.Size())
		b.ReportAllocs()
		runtime.GC()
		stop := peakHeap()
		start := time.Now()
		for b.Loop() {
			d, err := Read(context.Background(), []string{path}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if d.Rows != int64(rows) {
				b.Fatalf("%d rows, want %d", d.Rows, rows)
			}
		}
		elapsed := time.Since(start)
		b.ReportMetric(float64(rows)*float64(b.N)/elapsed.Seconds(), "rows/s")
		b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
	})
}

// BenchmarkSummarize times the inspect figures on the same data.
func BenchmarkSummarize(b *testing.B) {
	path, rows := benchFile(b)
	d, err := Read(context.Background(), []string{path}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			Summarize(d)
		}
		b.ReportMetric(float64(rows)*float64(b.N)/time.Since(start).Seconds(), "rows/s")
	})
}
