// Package spill keeps large arrays in a file on local disk instead of the
// heap: an Arena is a temporary file mapped into memory, from which
// slices are carved. The kernel writes the pages to the file and drops
// them when memory is short; a run that reads the arrays pass after pass
// streams them from disk through the page cache. Trimming (Arena.Trim,
// or the periodic trim of StartTrimming) unmaps the pages the process
// holds, so its resident memory counts only the pages in use since the
// last trim.
//
// The file is removed as soon as it is mapped: nothing is left on disk
// when the process ends, however it ends.
package spill

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"
)

// ErrUnsupported: this system cannot map files (the caller keeps the
// arrays on the heap).
var ErrUnsupported = errors.New("spill: memory-mapped files are not supported on this system")

// Arena is a memory-mapped temporary file from which slices are carved.
// Its slices are valid until Close.
type Arena struct {
	mu   sync.Mutex
	mem  []byte
	used int
	stop chan struct{}
	done chan struct{}
}

// New maps a new temporary file of size bytes in dir ("" for the system's
// temporary directory).
func New(dir string, size int64) (*Arena, error) {
	if size <= 0 {
		return nil, fmt.Errorf("spill: size %d", size)
	}
	f, err := os.CreateTemp(dir, "psrlcb-spill-*")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := f.Name()
	defer os.Remove(name)
	if err := f.Truncate(size); err != nil {
		return nil, fmt.Errorf("spill: %s: %w", name, err)
	}
	mem, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("spill: %s: %w", name, err)
	}
	return &Arena{mem: mem}, nil
}

// carve returns the next n bytes aligned to align, or an error when the
// arena is full.
func (a *Arena) carve(n, align int) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mem == nil {
		return nil, errors.New("spill: arena closed")
	}
	start := (a.used + align - 1) / align * align
	if n < 0 || start+n > len(a.mem) {
		return nil, fmt.Errorf("spill: %d bytes requested, %d of %d free", n, len(a.mem)-start, len(a.mem))
	}
	a.used = start + n
	return a.mem[start : start+n : start+n], nil
}

// Uint16s is a zeroed []uint16 of length n in the arena.
func (a *Arena) Uint16s(n int) ([]uint16, error) {
	b, err := a.carve(2*n, 8)
	if err != nil || n == 0 {
		return []uint16{}, err
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n), nil
}

// Float64s is a zeroed []float64 of length n in the arena.
func (a *Arena) Float64s(n int) ([]float64, error) {
	b, err := a.carve(8*n, 8)
	if err != nil || n == 0 {
		return []float64{}, err
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), n), nil
}

// Size is the arena's length in bytes.
func (a *Arena) Size() int { return len(a.mem) }

// Trim drops the arena's pages from the process's memory; the data stays
// in the file (through the page cache) and is read back on the next
// access.
func (a *Arena) Trim() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mem == nil {
		return nil
	}
	return dropPages(a.mem)
}

// StartTrimming trims the arena every interval until Close, so that the
// process's resident memory holds only the pages read or written since
// the last trim.
func (a *Arena) StartTrimming(interval time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop != nil || a.mem == nil {
		return
	}
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				a.Trim()
			}
		}
	}(a.stop, a.done)
}

// Close stops the trimming and unmaps the arena: every slice carved from
// it is invalid afterwards.
func (a *Arena) Close() error {
	a.mu.Lock()
	stop, done := a.stop, a.done
	a.stop = nil
	a.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mem == nil {
		return nil
	}
	err := unmap(a.mem)
	a.mem = nil
	return err
}
