// Package memlimit reads the memory budget of a run: the machine's memory
// (the smaller of the cgroup's limit and the physical memory) and the
// --memory-limit values users write ("4GiB", "600MiB", "50%").
package memlimit

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// DefaultShare is the default budget as a share of the machine's memory:
// half, so that a fit leaves the other half to the system and to other
// jobs on the machine.
const DefaultShare = 0.5

// Default is the default --memory-limit value.
const Default = "50%"

// Files are the places Machine reads, replaceable in tests.
type Files struct {
	CgroupV2 string // memory.max of the cgroup v2 hierarchy ("max" or bytes)
	CgroupV1 string // memory.limit_in_bytes of the cgroup v1 hierarchy
	MemInfo  string // /proc/meminfo
}

// System are the files of this machine.
var System = Files{
	CgroupV2: "/sys/fs/cgroup/memory.max",
	CgroupV1: "/sys/fs/cgroup/memory/memory.limit_in_bytes",
	MemInfo:  "/proc/meminfo",
}

// Machine is the memory the process may use: the physical memory, or the
// cgroup's limit when that is lower (a container). 0 when neither can be
// read (a system without /proc).
func (f Files) Machine() uint64 {
	total := memTotal(f.MemInfo)
	for _, p := range []string{f.CgroupV2, f.CgroupV1} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v == 0 {
			continue // "max": no limit
		}
		if total == 0 || v < total {
			total = v
		}
	}
	return total
}

// memTotal is MemTotal of a /proc/meminfo file in bytes (0 when absent).
func memTotal(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := memTotalLine(s.Text()); ok {
			return v
		}
	}
	return 0
}

// memTotalLine is the bytes of a "MemTotal: n kB" line of /proc/meminfo
// (0 when n is not a number); ok is false for any other line.
func memTotalLine(line string) (v uint64, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "MemTotal:" {
		return 0, false
	}
	v, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, true
	}
	if len(fields) >= 3 && fields[2] == "kB" {
		v *= 1024
	}
	return v, true
}

var units = []struct {
	suffix string
	scale  float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// Parse reads a memory budget: a size ("600MiB", "4GiB", "1.5GB", "2G"
// where K, M, G, T without a B are binary, or a plain number of bytes), a
// share of the machine's memory ("50%"), or "none" (no budget: 0). machine
// is Machine's figure; a share of an unknown machine (0) is no budget.
func Parse(s string, machine uint64) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "none") {
		return 0, nil
	}
	if p, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return 0, fmt.Errorf("memory limit %q: a share must be a number in (0, 100]%%", s)
		}
		return int64(math.Min(float64(machine)*v/100, math.MaxInt64)), nil
	}
	scale := 1.0
	num := t
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			num, scale = strings.TrimSpace(n), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) || v*scale >= math.MaxInt64 {
		return 0, fmt.Errorf(`memory limit %q: want a size such as "600MiB" or "4GiB", a share such as "50%%", or "none"`, s)
	}
	return int64(v * scale), nil
}

// Format writes a byte count the way Parse reads it, in bytes, KiB, MiB or
// GiB.
func Format(b int64) string {
	if b < 1<<10 {
		return fmt.Sprintf("%d B", b)
	}
	if b < 1<<20 {
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	if b >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	if b >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
