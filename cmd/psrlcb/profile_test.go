package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartProfile: PSRLCB_CPUPROFILE writes a profile that pprof can
// read (it starts with gzip's magic bytes); an unwritable path is
// reported and the run goes on; an empty path does nothing.
func TestStartProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	var stderr bytes.Buffer
	stop := startProfile(path, &stderr)
	x := 0
	for i := 0; i < 1e7; i++ {
		x += i % 7
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b || stderr.Len() != 0 {
		t.Fatalf("profile: %d bytes, err %v, stderr %q (x=%d)", len(b), err, stderr.String(), x)
	}
	stderr.Reset()
	startProfile(filepath.Join(dir, "missing", "cpu.prof"), &stderr)()
	if !strings.Contains(stderr.String(), "PSRLCB_CPUPROFILE") {
		t.Fatalf("unwritable path: stderr %q", stderr.String())
	}
	stderr.Reset()
	startProfile("", &stderr)()
	if stderr.Len() != 0 {
		t.Fatalf("empty path wrote %q", stderr.String())
	}
}

// TestGCPercent: the run sets its own GC target only when GOGC is unset,
// so a user's GOGC (a number or "off") is left to the runtime, and not
// for inspect.
func TestGCPercent(t *testing.T) {
	for _, args := range [][]string{{"fit", "logs.parquet"}, {"evaluate"}, nil} {
		if p, ok := gcPercent("", args); !ok || p != defaultGCPercent || p <= 0 || p >= 100 {
			t.Fatalf("unset GOGC, %q: %d, %v (want %d, true; a target below the runtime's 100)", args, p, ok, defaultGCPercent)
		}
	}
	if p, ok := gcPercent("", []string{"inspect", "logs.parquet"}); !ok || p != inspectGCPercent || p <= 100 {
		t.Fatalf("inspect: %d, %v (want %d, true; a target above the runtime's 100)", p, ok, inspectGCPercent)
	}
	if _, ok := gcPercent("50", []string{"inspect"}); ok {
		t.Fatal("GOGC=50 overridden for inspect")
	}
	for _, env := range []string{"100", "off", "50"} {
		if _, ok := gcPercent(env, []string{"fit"}); ok {
			t.Fatalf("GOGC=%s overridden", env)
		}
	}
}
