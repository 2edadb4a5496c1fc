package memlimit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestParse: sizes in binary and decimal units, shares of the machine,
// "none", and what is refused.
func TestParse(t *testing.T) {
	const machine = 24 << 30
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"600MiB", 600 << 20}, {"4GiB", 4 << 30}, {"4G", 4 << 30}, {"1.5GB", 1_500_000_000},
		{"512MB", 512_000_000}, {"1048576", 1 << 20}, {"50%", 12 << 30}, {"12.5%", 3 << 30},
		{"none", 0}, {"", 0}, {" 2 GiB ", 2 << 30}, {"100B", 100},
	} {
		got, err := Parse(c.in, machine)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"-1GiB", "0", "0%", "101%", "lots", "4XB", "1e30GiB", "NaN"} {
		if got, err := Parse(bad, machine); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", bad, got)
		}
	}
	if got, err := Parse("50%", 0); err != nil || got != 0 {
		t.Errorf("a share of an unknown machine: %d, %v; want 0 (no budget)", got, err)
	}
}

// TestMachine: the smaller of MemTotal and a cgroup limit; "max" is no
// limit; nothing readable is 0.
func TestMachine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mem := write("meminfo", "MemTotal:       24684092 kB\nMemFree:        1000 kB\n")
	v2max := write("v2max", "max\n")
	v2 := write("v2", "4294967296\n")
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		f    Files
		want uint64
	}{
		{Files{CgroupV2: v2max, CgroupV1: missing, MemInfo: mem}, 24684092 * 1024},
		{Files{CgroupV2: v2, CgroupV1: missing, MemInfo: mem}, 4 << 30},
		{Files{CgroupV2: missing, CgroupV1: v2, MemInfo: missing}, 4 << 30},
		{Files{CgroupV2: missing, CgroupV1: missing, MemInfo: missing}, 0},
	} {
		if got := c.f.Machine(); got != c.want {
			t.Errorf("%+v: %d, want %d", c.f, got, c.want)
		}
	}
}

// TestFormat: MiB below a GiB, GiB above.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		b    int64
		want string
	}{{600 << 20, "600 MiB"}, {4 << 30, "4.00 GiB"}, {12 << 30, "12.0 GiB"}, {100 << 10, "100 KiB"}, {512, "512 B"}} {
		if got := Format(c.b); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.b, got, c.want)
		}
	}
}
