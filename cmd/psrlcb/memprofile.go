package main

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// memProfileEvery is how often the peak-heap profiler samples the live
// heap.
const memProfileEvery = 250 * time.Millisecond

// startMemProfile writes a heap profile to path (the environment variable
// PSRLCB_MEMPROFILE; nothing when empty) each time the heap in use reaches
// a new high by a tenth, and once more at the end, so that the file left
// holds the allocations live near the run's peak: `go tool pprof
// -sample_index=inuse_space` shows what the peak resident memory is made
// of. A profile that cannot be written is reported once and the run goes
// on.
func startMemProfile(path string, stderr io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	p := &heapProfiler{path: path, stderr: stderr}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		p.watch(done)
	}()
	return func() {
		close(done)
		<-finished
	}
}

// heapProfiler writes the heap profile to path, and after the first
// failure, reported to stderr, no more.
type heapProfiler struct {
	path   string
	stderr io.Writer
	failed bool
}

// write writes the profile unless an earlier write failed.
func (p *heapProfiler) write() {
	if p.failed {
		return
	}
	err := writeHeapProfile(p.path)
	if err != nil {
		p.failed = true
		fmt.Fprintf(p.stderr, "psrlcb: PSRLCB_MEMPROFILE: %v (no profile written)\n", err)
	}
}

// watch samples the heap in use every memProfileEvery and writes the
// profile at each new high by a tenth, until done is closed; then once
// more if it never wrote.
func (p *heapProfiler) watch(done <-chan struct{}) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var high uint64
	t := time.NewTicker(memProfileEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			if high == 0 {
				p.write()
			}
			return
		case <-t.C:
			high = p.sample(sample, high)
		}
	}
}

// sample reads the heap in use into s and writes the profile when it is
// a tenth above the high mark high; it returns the new high mark.
func (p *heapProfiler) sample(s []metrics.Sample, high uint64) uint64 {
	metrics.Read(s)
	if v := s[0].Value.Uint64(); v > high+high/10 {
		high = v
		p.write()
	}
	return high
}

// writeHeapProfile writes the heap profile to path through a temporary
// file, so the file at path is always a whole profile.
func writeHeapProfile(path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
