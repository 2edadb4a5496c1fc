package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/report"
)

// identicalRuns are the runs whose outputs TestOutputsByteIdentical pins:
// the README's main command, a belief plan with a small table (so the
// controller and its rollouts carry the values), and a run on narrow logs
// where the behaviour fallback returns the improved behaviour (a
// stochastic policy).
var identicalRuns = []struct {
	name string
	logs string   // "" : the narrow logs the test simulates
	args []string // fit options
}{
	{"readme", exampleLogs, nil},
	{"belief", exampleLogs, []string{"--rank", "2", "--restarts", "2", "--alpha", "0.3", "--planner", "belief", "--plan-rows", "40"}},
	{"fallback", "", []string{"--rank", "2", "--restarts", "2"}},
}

// volatileManifest are the manifest's keys that say when, where and with
// which build the run happened, not what it computed; "a.b" is key b of
// the object at key a, and must be there. The parameters' memory_limit
// is one: by default it is half of the machine's MemTotal, which differs
// by a few kB between machines of the same size (the Arrow tables'
// hashes still show any change the limit makes).
var volatileManifest = []string{"started", "stage_seconds", "version", "go_version", "inputs", "parameters.memory_limit"}

// TestOutputsByteIdentical runs identicalRuns and compares the SHA-256 of
// every Arrow table and of the manifest (without its volatile keys) with
// testdata/golden/hashes.json: a change that should not change what a run
// computes (a refactor) must leave them all as they are. A change that
// does change the outputs rewrites the file with
// `go test ./cmd/psrlcb -run OutputsByteIdentical -update`, and its commit
// says why. The hashes are of linux/amd64 builds (other platforms may
// round differently; the test skips there).
func TestOutputsByteIdentical(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the pinned hashes are of linux/amd64 builds")
	}
	if testing.Short() {
		t.Skip("fits three runs")
	}
	tmp := t.TempDir()
	narrow := filepath.Join(tmp, "narrow.parquet")
	if out, code, err := runCLI(t, "simulate", "--pomdp", examplePOMDP, "--horizon", "4", "--episodes", "2000",
		"--behavior", "fixed:open-left:0.3", "--seed", "3", "--out", narrow); code != 0 {
		t.Fatalf("simulate: exit %d: %v\n%s", code, err, out)
	}
	got := map[string]string{}
	for _, r := range identicalRuns {
		logs := r.logs
		if logs == "" {
			logs = narrow
		}
		dir := filepath.Join(tmp, r.name)
		args := append([]string{"fit", logs, "--out", dir, "--log-format", "json"}, r.args...)
		if out, code, err := runCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %v\n%s", r.name, code, err, out)
		}
		// The runs are what they stand for.
		m, err := report.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, ctrlErr := os.Stat(filepath.Join(dir, report.ControllerFile))
		if (r.name == "fallback") != (m.Fallback != nil && m.Fallback.Used) || (r.name == "belief") != (ctrlErr == nil) {
			t.Fatalf("%s: fallback %+v, controller.arrow: %v", r.name, m.Fallback, ctrlErr)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			var b []byte
			switch {
			case strings.HasSuffix(name, ".arrow"):
				if b, err = os.ReadFile(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			case name == "manifest.json":
				b = stableManifest(t, filepath.Join(dir, name))
			default:
				continue
			}
			sum := sha256.Sum256(b)
			got[r.name+"/"+name] = hex.EncodeToString(sum[:])
		}
	}
	path := filepath.Join("testdata", "golden", "hashes.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s: sha256 %s, pinned %s", k, got[k], want[k])
		}
	}
}

// stableManifest is the manifest without its volatile keys, re-encoded
// with sorted keys.
func stableManifest(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range volatileManifest {
		obj, key := m, k
		if parent, child, nested := strings.Cut(k, "."); nested {
			sub, _ := m[parent].(map[string]any)
			if _, ok := sub[child]; !ok {
				t.Fatalf("%s: no %s", path, k)
			}
			obj, key = sub, child
		}
		delete(obj, key)
	}
	out, err := json.Marshal(m) // map keys are sorted
	if err != nil {
		t.Fatal(err)
	}
	return out
}
