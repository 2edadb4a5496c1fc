package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/report"
)

// fuzzCase is one whole-pipeline trial drawn from a seed: small logs in
// one or two files with random column types, lengths, rewards and flaws,
// and random fit flags and output places.
type fuzzCase struct {
	files []logSpec
	args  []string
	// outKind: 0 a new directory, 1 nested missing parents, 2 an earlier
	// fit output (with --force), 3 a directory of the user's (with
	// --force), 4 the logs directory itself (with --force).
	outKind int
}

func drawFuzzCase(seed uint64, knobs uint8) fuzzCase {
	rng := rand.New(rand.NewPCG(seed, uint64(knobs)))
	var fc fuzzCase
	K := 2 + rng.IntN(40)
	H := 1 + rng.IntN(3)
	early := rng.IntN(2) == 0
	l := smallLogs(rng, K, H, early)
	l.intEpisode, l.intObs, l.intAct, l.intReward = rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(3) == 0
	l.propensity, l.terminal = rng.IntN(4) != 0, rng.IntN(4) != 0
	// Rewards: the default 0/1, constant, wide, or huge.
	switch rng.IntN(6) {
	case 1:
		for i := range l.rows {
			l.rows[i].reward = 7
		}
	case 2:
		for i := range l.rows {
			l.rows[i].reward = math.Round(rng.NormFloat64() * 1e6)
		}
	case 3:
		for i := range l.rows {
			l.rows[i].reward = math.Copysign(1e308, rng.NormFloat64())
		}
	}
	// Flaws: a propensity out of range, a duplicated row, a gap.
	if len(l.rows) > 0 {
		switch rng.IntN(12) {
		case 0:
			l.rows[rng.IntN(len(l.rows))].prop = 1.5
		case 1:
			l.rows = append(l.rows, l.rows[rng.IntN(len(l.rows))])
		case 2:
			i := rng.IntN(len(l.rows))
			l.rows[i].step += 5
		}
	}
	// One file, or the episodes split over two (maybe with a column of
	// another type in the second).
	if rng.IntN(3) == 0 && len(l.rows) > 1 {
		cut := rng.IntN(len(l.rows))
		a, b := l, l
		a.rows, b.rows = l.rows[:cut], l.rows[cut:]
		if rng.IntN(4) == 0 {
			b.intObs = !b.intObs
		}
		fc.files = []logSpec{a, b}
	} else {
		fc.files = []logSpec{l}
	}
	fc.args = []string{"--restarts", "1", "--max-iter", "20", "--log-format", "json", "--seed", fmt.Sprint(rng.IntN(5))}
	switch rng.IntN(3) {
	case 0:
		fc.args = append(fc.args, "--rank", "1")
	case 1:
		fc.args = append(fc.args, "--rank", "2")
	default:
		fc.args = append(fc.args, "--rank", "auto", "--max-rank", "2")
	}
	switch rng.IntN(3) {
	case 0:
		fc.args = append(fc.args, "--alpha", "0.3")
	case 1:
		fc.args = append(fc.args, "--alpha", "0,1")
	}
	if rng.IntN(3) == 0 {
		fc.args = append(fc.args, "--horizon", fmt.Sprint(rng.IntN(6)))
	}
	if rng.IntN(3) == 0 {
		fc.args = append(fc.args, "--on-invalid", "skip")
	}
	fc.outKind = []int{0, 0, 0, 0, 1, 1, 2, 2, 3, 4}[rng.IntN(10)]
	// Drawn last, so the draws above (and the seeds named below) are as
	// before: wide vocabularies (every row its own observation), more
	// states than the logs can tell apart, and small memory limits.
	if rng.IntN(5) == 0 {
		n := 1000
		for i := range fc.files {
			for j := range fc.files[i].rows {
				fc.files[i].rows[j].obs = int64(n)
				n++
			}
		}
	}
	switch rng.IntN(6) {
	case 0:
		fc.args = append(fc.args, "--rank", "1000")
	case 1:
		fc.args = append(fc.args, "--rank", "auto", "--max-rank", "1000")
	}
	if rng.IntN(4) == 0 {
		fc.args = append(fc.args, "--memory-limit", []string{"64MiB", "8MiB", "1GiB"}[rng.IntN(3)])
	}
	return fc
}

// checkFuzzCase runs the case through the command line in a fresh
// directory and checks the reliability contract: exit 0, 2 or 3; no
// panic; nothing touched outside --out; nothing partial left; on success a
// complete output, on failure the output as it was.
func checkFuzzCase(t *testing.T, fc fuzzCase) {
	root := t.TempDir()
	logs := filepath.Join(root, "logs")
	os.MkdirAll(logs, 0o755)
	var files []string
	for i, f := range fc.files {
		files = append(files, f.write(t, filepath.Join(logs, fmt.Sprintf("part-%d.parquet", i))))
	}
	args := append([]string{"fit"}, files...)
	var out string
	switch fc.outKind {
	case 0:
		out = filepath.Join(root, "run")
	case 1:
		out = filepath.Join(root, "np", "a", "run")
	case 2:
		out = filepath.Join(root, "run")
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, report.ManifestFile), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(out, report.PolicyFile), []byte("old"), 0o644)
		args = append(args, "--force")
	case 3:
		out = filepath.Join(root, "mine")
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, "thesis.tex"), []byte("keep"), 0o644)
		args = append(args, "--force")
	case 4:
		out = logs
		args = append(args, "--force")
	}
	args = append(append(args, "--out", out), fc.args...)
	outside := snapshot(t, root, out)
	inside := snapshot(t, out, "")

	var buf bytes.Buffer
	code, err := runMain(context.Background(), &buf, &buf, args...)
	if code != exitOK && code != exitUsage && code != exitData {
		t.Fatalf("psrlcb %s\nexit %d: %v\n%s", strings.Join(args, " "), code, err, buf.String())
	}
	after := snapshot(t, root, out)
	for p := filepath.Dir(out); p != root && len(p) > len(root); p = filepath.Dir(p) {
		if code == exitOK && outside[p] == "" {
			outside[p] = after[p] // the parents made for a successful run
		}
	}
	sameSnapshot(t, "outside --out", outside, after)
	for p := range snapshot(t, root, "") {
		if strings.Contains(p, ".partial-") {
			t.Errorf("partial output left: %s", p)
		}
	}
	if code == exitOK {
		if _, err := os.Stat(filepath.Join(out, report.ManifestFile)); err != nil {
			t.Errorf("exit 0 without a complete output: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(out, report.ManifestFile)); bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Inf")) {
			t.Errorf("NaN or Inf in manifest.json: %s", nonFiniteLines(b))
		}
	} else {
		sameSnapshot(t, "--out after a failed run", inside, snapshot(t, out, ""))
	}
	if testing.Verbose() || t.Failed() {
		t.Logf("psrlcb %s\nexit %d: %v\n%s", strings.Join(args, " "), code, err, buf.String())
	}
}

// FuzzFit runs random small logs and flags through the whole command line
// in-process (see checkFuzzCase for what is checked). The seed corpus runs
// in `go test` in a few seconds; `go test ./cmd/psrlcb -run '^$' -fuzz
// FuzzFit -fuzztime 2m` explores further.
func FuzzFit(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.seed, s.knobs)
	}
	f.Fuzz(func(t *testing.T, seed uint64, knobs uint8) {
		fc := drawFuzzCase(seed, knobs)
		checkFuzzCase(t, fc)
	})
}

type fuzzSeed struct {
	seed  uint64
	knobs uint8
}

// fuzzSeeds are seeds 1..60 (knobs seed mod 5): every output place, one
// and two files, mixed column types, flaws, constant, wide and huge
// rewards, one-step logs. Among them seed 3 (wide rewards: an infinite EM
// trace point broke the report's plot), seed 28 (a reward value only in
// held-out episodes broke the warm start of the final fit) and the one-step
// and ±1e308 seeds 1, 6, 14, 15, 20, 21, 22, 31, 34, 36, 40, 51, 55 and 60
// (json: unsupported value: +Inf; the planner's index out of range) failed
// before.
var fuzzSeeds = func() []fuzzSeed {
	var out []fuzzSeed
	for s := uint64(1); s <= 60; s++ {
		out = append(out, fuzzSeed{s, uint8(s % 5)})
	}
	return out
}()

// nonFiniteLines are the lines of b that mention NaN or Inf.
func nonFiniteLines(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "NaN") || strings.Contains(l, "Inf") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " | ")
}
