// Package parallel runs loops over independent indices on a bounded number
// of goroutines. It owns the three rules every parallel loop of psrlcb
// follows:
//
//   - Workers: 0 or less means GOMAXPROCS; never more goroutines than
//     indices.
//   - Cancellation: no index starts after ctx is cancelled, and For then
//     returns ctx.Err().
//   - Determinism: indices are handed out in increasing order, so when some
//     fail, every smaller index was handed out too and has finished; For
//     returns the error of the smallest failing index, whatever the number
//     of workers. Results written by index (out[i] = …) are therefore the
//     same for any worker count as long as fn(i) depends on i only.
//
// A panic in fn (a bug) does not crash the process from a worker
// goroutine: For recovers it and returns it as a *PanicError, an error of
// no errkind kind, so the caller's ordinary error path reports it as an
// internal error. Do, which has no error to return, re-raises the panic on
// the calling goroutine instead.
package parallel

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// PanicError is a panic recovered from fn at one index: a bug, not a
// problem with the input.
type PanicError struct {
	Index int    // the index whose fn panicked
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error: panic at index %d of a parallel loop: %v\n%s", e.Index, e.Value, e.Stack)
}

// Workers is the number of goroutines for a requested count w: GOMAXPROCS
// when w ≤ 0.
func Workers(w int) int {
	if w <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

// For calls fn(i) for i in [0, n) on at most Workers(workers) goroutines and
// waits for them. After the first failure no new index starts; the error
// returned is that of the smallest failing index, or ctx.Err() when ctx was
// cancelled. A panic in fn(i) is a failure of index i whose error is a
// *PanicError.
func For(ctx context.Context, n, workers int, fn func(i int) error) error {
	return loop(ctx, n, workers, func() func(int) error { return fn })
}

// ForWith is For with scratch state per goroutine: each goroutine calls
// newState once, before its first index, and passes the state to every
// fn call it makes. The state must not carry results from one index to
// the next, or they would depend on the scheduling.
func ForWith[S any](ctx context.Context, n, workers int, newState func() S, fn func(s S, i int) error) error {
	return loop(ctx, n, workers, func() func(int) error {
		s := newState()
		return func(i int) error { return fn(s, i) }
	})
}

// loopState is what the goroutines of one loop share: the next index to
// hand out, whether to stop, and the smallest failing index with its
// error.
type loopState struct {
	ctx     context.Context
	n       int
	mk      func() func(int) error
	next    atomic.Int64
	stop    atomic.Bool
	mu      sync.Mutex
	errIdx  int
	failure error
}

// loop runs the goroutines; each calls mk once for its body.
func loop(ctx context.Context, n, workers int, mk func() func(int) error) error {
	if n <= 0 {
		return ctx.Err()
	}
	w := min(Workers(workers), n)
	s := &loopState{ctx: ctx, n: n, mk: mk, errIdx: n}
	if w == 1 {
		s.run()
	} else {
		var wg sync.WaitGroup
		for range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.run()
			}()
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.failure
}

// fail stops the loop after index i failed with err, keeping the error of
// the smallest failing index.
func (s *loopState) fail(i int, err error) {
	s.stop.Store(true)
	s.mu.Lock()
	if i < s.errIdx {
		s.errIdx, s.failure = i, err
	}
	s.mu.Unlock()
}

// run is the work of one goroutine: it takes the next index until none is
// left, the loop stops, ctx is cancelled or an index fails. It calls mk
// for its body before its first index.
func (s *loopState) run() {
	var fn func(int) error
	body := func(i int) error {
		if fn == nil {
			fn = s.mk()
		}
		return fn(i)
	}
	for !s.stop.Load() {
		i := int(s.next.Add(1) - 1)
		if i >= s.n {
			return
		}
		if err := s.ctx.Err(); err != nil {
			s.fail(i, err)
			return
		}
		if err := call(body, i); err != nil {
			s.fail(i, err)
			return
		}
	}
}

// call runs fn(i), turning a panic into a *PanicError.
func call(fn func(int) error, i int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Index: i, Value: r, Stack: debug.Stack()}
		}
	}()
	return fn(i)
}

// Do is For for a loop body that cannot fail. A panic in fn is re-raised
// on the calling goroutine, as the *PanicError of the smallest panicking
// index, where the caller's own recover (if any) sees it; it never
// crashes the process from a worker goroutine.
func Do(n, workers int, fn func(i int)) {
	if err := For(context.Background(), n, workers, func(i int) error {
		fn(i)
		return nil
	}); err != nil {
		panic(err)
	}
}

// Go runs fn on a new goroutine and returns a function that waits for it.
// A panic in fn is re-raised by wait, on the waiting goroutine, as a
// *PanicError (Index 0).
func Go(fn func()) (wait func()) {
	done := make(chan error, 1)
	go func() { done <- call(func(int) error { fn(); return nil }, 0) }()
	return func() {
		if err := <-done; err != nil {
			panic(err)
		}
	}
}
