package parallel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

func TestForVisitsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 7, 100} {
		const n = 1000
		var hits [n]atomic.Int32
		if err := For(context.Background(), n, workers, func(i int) error {
			hits[i].Add(1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Fatalf("workers %d: index %d ran %d times", workers, i, h)
			}
		}
	}
}

// The smallest failing index wins, whatever the worker count and
// scheduling: indices 300, 301 and 900 fail.
func TestForErrorIsTheSmallestFailingIndex(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		for rep := 0; rep < 20; rep++ {
			err := For(context.Background(), 1000, workers, func(i int) error {
				if i == 300 || i == 301 || i == 900 {
					return fmt.Errorf("index %d", i)
				}
				return nil
			})
			if err == nil || err.Error() != "index 300" {
				t.Fatalf("workers %d: err = %v, want index 300", workers, err)
			}
		}
	}
}

func TestForStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int64
	err := For(ctx, 1_000_000, 2, func(i int) error {
		if ran.Add(1) == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r := ran.Load(); r > 100 {
		t.Errorf("%d indices ran after cancellation at 10", r)
	}
}

func TestWorkersDefault(t *testing.T) {
	if Workers(0) < 1 || Workers(-3) != Workers(0) || Workers(5) != 5 {
		t.Errorf("Workers: %d %d %d", Workers(0), Workers(-3), Workers(5))
	}
	Do(0, 4, func(int) { t.Error("ran on n = 0") })
}

// A panic in a worker is an error of the smallest panicking index, with
// the value and the stack, for every worker count; the process survives.
func TestForRecoversPanic(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		err := For(context.Background(), 100, workers, func(i int) error {
			if i == 40 || i == 70 {
				var s []int
				s[i-37]++ // out of range: a runtime panic
			}
			if i == 50 {
				panic(fmt.Sprintf("value %d", i))
			}
			return nil
		})
		var pe *PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("workers %d: err = %v, want a *PanicError", workers, err)
		}
		if pe.Index != 40 {
			t.Errorf("workers %d: index %d, want 40", workers, pe.Index)
		}
		msg := err.Error()
		for _, want := range []string{"internal error", "index 40", "index out of range [3]", "parallel_test.go"} {
			if !strings.Contains(msg, want) {
				t.Errorf("workers %d: message lacks %q:\n%s", workers, want, msg)
			}
		}
	}
}

// Do re-raises a worker's panic on the calling goroutine.
func TestDoRepanicsOnCaller(t *testing.T) {
	defer func() {
		r := recover()
		pe, ok := r.(*PanicError)
		if !ok || pe.Index != 3 || pe.Value != "three" {
			t.Fatalf("recovered %#v, want the *PanicError of index 3", r)
		}
	}()
	Do(10, 2, func(i int) {
		if i == 3 {
			panic("three")
		}
	})
	t.Fatal("Do returned after a panic")
}

// ForWith makes one state per goroutine, at most Workers(workers) of them,
// and every index sees a state; a panic in newState is the index's error.
func TestForWithStatePerGoroutine(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		var made atomic.Int32
		var sum atomic.Int64
		err := ForWith(context.Background(), 50, workers, func() *int {
			made.Add(1)
			return new(int)
		}, func(s *int, i int) error {
			*s += i // private to the goroutine: no race
			sum.Add(int64(i))
			return nil
		})
		if err != nil || sum.Load() != 49*50/2 {
			t.Fatalf("workers %d: err %v, sum %d", workers, err, sum.Load())
		}
		if m := made.Load(); m < 1 || int(m) > workers {
			t.Errorf("workers %d: %d states", workers, m)
		}
	}
	err := ForWith(context.Background(), 5, 1, func() int { panic("no state") }, func(int, int) error { return nil })
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Index != 0 || pe.Value != "no state" {
		t.Errorf("panic in newState: %v", err)
	}
}

// Go's wait returns after fn, and re-raises fn's panic.
func TestGo(t *testing.T) {
	x := 0
	wait := Go(func() { x = 7 })
	wait()
	if x != 7 {
		t.Fatalf("x = %d after wait", x)
	}
	defer func() {
		if pe, ok := recover().(*PanicError); !ok || pe.Value != "late" {
			t.Fatalf("wait did not re-raise the panic")
		}
	}()
	Go(func() { panic("late") })()
	t.Fatal("wait returned after a panic")
}
