package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/internal/genpomdp"
	"github.com/psrlcb/psrlcb/internal/simd"
)

// TestKernelsKeepOutputs fits the same logs with the vector kernels
// (internal/simd) on and off and compares every Arrow file and the
// manifest (less its volatile keys) byte for byte. The problem is big
// enough for the kernels to run: 8 hidden states (the E-step's kernels
// need at least 4) and a belief plan whose α-sets pass the lookahead
// kernel's 32 vectors. Skipped where the processor has no AVX2 (only the
// portable path runs there).
func TestKernelsKeepOutputs(t *testing.T) {
	if !simd.AVX2 {
		t.Skip("no AVX2 on this processor (or PSRLCB_PORTABLE set): only the portable path runs")
	}
	if testing.Short() {
		t.Skip("fits twice")
	}
	tmp := t.TempDir()
	pr, err := genpomdp.Generate(genpomdp.Spec{Family: "dense", States: 8, Actions: 3, Obs: 4, StartStates: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(tmp, "gen.pomdp")
	if err := os.WriteFile(model, []byte(pr.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(tmp, "logs.parquet")
	if out, code, err := runCLI(t, "simulate", "--pomdp", model, "--horizon", "6", "--episodes", "4000", "--seed", "2", "--out", logs); code != 0 {
		t.Fatalf("simulate: exit %d: %v\n%s", code, err, out)
	}
	fit := func(name string) string {
		dir := filepath.Join(tmp, name)
		if out, code, err := runCLI(t, "fit", logs, "--out", dir, "--rank", "8", "--restarts", "2", "--planner", "belief", "--log-format", "json"); code != 0 {
			t.Fatalf("%s: exit %d: %v\n%s", name, code, err, out)
		}
		return dir
	}
	vector := fit("vector")
	wide := simd.AVX512
	simd.AVX2, simd.AVX512 = false, false
	defer func() { simd.AVX2, simd.AVX512 = true, wide }()
	portable := fit("portable")
	entries, err := os.ReadDir(vector)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, e := range entries {
		name := e.Name()
		var a, b []byte
		switch {
		case strings.HasSuffix(name, ".arrow"):
			a, _ = os.ReadFile(filepath.Join(vector, name))
			if b, err = os.ReadFile(filepath.Join(portable, name)); err != nil {
				t.Fatal(err)
			}
		case name == "manifest.json":
			a, b = stableManifest(t, filepath.Join(vector, name)), stableManifest(t, filepath.Join(portable, name))
		default:
			continue
		}
		compared++
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the vector kernels and the portable path", name)
		}
	}
	if compared < 5 {
		t.Fatalf("compared %d files", compared)
	}
}
