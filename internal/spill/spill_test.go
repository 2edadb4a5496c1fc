package spill

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestArena: slices carved from the arena keep what was written through
// trims (the data lives in the file), the file is gone from the directory
// once mapped, and asking for more than the arena holds is an error.
func TestArena(t *testing.T) {
	dir := t.TempDir()
	a, err := New(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the spill file is still in %s: %v", dir, ents)
	}
	u, err := a.Uint16s(1001)
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.Float64s(1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range u {
		u[i] = uint16(i * 7)
	}
	for i := range f {
		f[i] = float64(i) / 3
	}
	a.StartTrimming(time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if err := a.Trim(); err != nil {
		t.Fatal(err)
	}
	for i := range u {
		if u[i] != uint16(i*7) {
			t.Fatalf("u[%d] = %d after trimming, want %d", i, u[i], i*7)
		}
	}
	for i := range f {
		if f[i] != float64(i)/3 {
			t.Fatalf("f[%d] = %v after trimming, want %v", i, f[i], float64(i)/3)
		}
	}
	if _, err := a.Float64s(1 << 20); err == nil {
		t.Fatal("a request beyond the arena: no error")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Uint16s(1); err == nil {
		t.Fatal("a closed arena carved a slice")
	}
}

// rssFile is the process's resident file-backed memory in bytes
// (/proc/self/status, Linux).
func rssFile(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestTrimReleasesMemory: after 64 MiB are written into the arena the
// process holds them; a trim gives at least half of them back, and
// reading them again brings them back.
func TestTrimReleasesMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	const n = 8 << 20 // 64 MiB of float64
	a, err := New(t.TempDir(), 8*n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	f, _ := a.Float64s(n)
	before := rssFile(t)
	for i := range f {
		f[i] = float64(i)
	}
	written := rssFile(t)
	if written-before < 32<<20 {
		t.Skipf("resident file memory grew by %d bytes only: not measurable here", written-before)
	}
	if err := a.Trim(); err != nil {
		t.Fatal(err)
	}
	trimmed := rssFile(t)
	if written-trimmed < 32<<20 {
		t.Fatalf("trim released %d bytes of the %d written", written-trimmed, written-before)
	}
	sum := 0.0
	for _, v := range f {
		sum += v
	}
	if want := float64(n) * float64(n-1) / 2; sum != want {
		t.Fatalf("sum after trim %v, want %v", sum, want)
	}
}
