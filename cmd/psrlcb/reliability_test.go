package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/progress"
	"github.com/psrlcb/psrlcb/report"
)

// logSpec describes a small random log file: the column types and the
// episodes.
type logSpec struct {
	intEpisode, intObs, intAct bool // integer instead of string columns
	intReward                  bool // int64 rewards instead of float64
	propensity, terminal       bool // optional columns present
	rows                       []logRow
}

type logRow struct {
	episode, step int64
	obs, act      int64
	reward        float64
	prop          float64
	terminal      bool
}

// write writes the log as Parquet.
func (l logSpec) write(t testing.TB, path string) string {
	t.Helper()
	g := parquet.Group{}
	str, i64, f64 := parquet.String(), parquet.Int(64), parquet.Leaf(parquet.DoubleType)
	pick := func(isInt bool) parquet.Node {
		if isInt {
			return i64
		}
		return str
	}
	g["episode_id"], g["step"] = pick(l.intEpisode), i64
	g["observation"], g["action"] = pick(l.intObs), pick(l.intAct)
	g["reward"] = f64
	if l.intReward {
		g["reward"] = i64
	}
	if l.propensity {
		g["propensity"] = f64
	}
	if l.terminal {
		g["terminal"] = parquet.Leaf(parquet.BooleanType)
	}
	schema := parquet.NewSchema("logs", g)
	col := map[string]int{}
	for i, p := range schema.Columns() {
		col[p[0]] = i
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewWriter(f, schema)
	sym := func(isInt bool, prefix string, v int64) parquet.Value {
		if isInt {
			return parquet.ValueOf(v)
		}
		return parquet.ValueOf(fmt.Sprintf("%s%d", prefix, v))
	}
	for _, r := range l.rows {
		row := make(parquet.Row, len(col))
		set := func(name string, v parquet.Value) { row[col[name]] = v.Level(0, 0, col[name]) }
		set("episode_id", sym(l.intEpisode, "e", r.episode))
		set("step", parquet.ValueOf(r.step))
		set("observation", sym(l.intObs, "o", r.obs))
		set("action", sym(l.intAct, "a", r.act))
		if l.intReward {
			set("reward", parquet.ValueOf(int64(r.reward)))
		} else {
			set("reward", parquet.ValueOf(r.reward))
		}
		if l.propensity {
			set("propensity", parquet.ValueOf(r.prop))
		}
		if l.terminal {
			set("terminal", parquet.ValueOf(r.terminal))
		}
		if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// smallLogs are K episodes of at most H steps over two observations and
// two actions, drawn uniformly with a reward that depends on both: a log
// fit handles in well under a second.
func smallLogs(rng *rand.Rand, K, H int, early bool) logSpec {
	l := logSpec{propensity: true, terminal: true}
	for k := range K {
		L := H
		if early && rng.IntN(3) == 0 {
			L = 1 + rng.IntN(H)
		}
		for h := 1; h <= L; h++ {
			o, a := rng.Int64N(2), rng.Int64N(2)
			r := 0.0
			if o == a {
				r = 1
			}
			l.rows = append(l.rows, logRow{episode: int64(k), step: int64(h), obs: o, act: a, reward: r, prop: 0.5, terminal: h == L})
		}
	}
	return l
}

// quickFit are fit options for the small logs.
var quickFit = []string{"--rank", "2", "--restarts", "1", "--max-iter", "30", "--alpha", "0.3", "--log-format", "json", "--seed", "3"}

// snapshot lists every path under root with its size and modification
// time, skipping skip (and what lies under it).
func snapshot(t *testing.T, root, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if skip != "" && (p == skip || strings.HasPrefix(p, skip+string(filepath.Separator))) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			out[p] = "dir" // its modification time changes with any entry made or removed in it
			return nil
		}
		info, err := d.Info()
		if err == nil {
			out[p] = fmt.Sprintf("%d %d", info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s: %s changed or vanished", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

// TestFitOutRefusedUpFront: every --out that would delete inputs or the
// user's files is refused with exit 2 before any work, naming what is in
// the way, and nothing under the root changes.
func TestFitOutRefusedUpFront(t *testing.T) {
	root := t.TempDir()
	logs := filepath.Join(root, "logs")
	os.MkdirAll(logs, 0o755)
	rng := rand.New(rand.NewPCG(1, 2))
	a := smallLogs(rng, 30, 2, false).write(t, filepath.Join(logs, "a.parquet"))
	thesis := filepath.Join(root, "thesis")
	os.MkdirAll(thesis, 0o755)
	os.WriteFile(filepath.Join(thesis, "chapter1.tex"), []byte("years of work"), 0o644)
	t.Chdir(root)
	before := snapshot(t, root, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{logs, "--out", logs, "--force"}, "is the input"},
		{[]string{"logs/", "--out", "logs", "--force"}, "is the input"},
		{[]string{a, "--out", logs, "--force"}, "contains the input"},
		{[]string{logs, "--out", filepath.Join(logs, "run")}, "lies inside the input"},
		{[]string{a, "--out", "."}, "current directory"},
		{[]string{a, "--out", ".", "--force"}, "current directory"},
		{[]string{a, "--out", thesis, "--force"}, "chapter1.tex"},
		{[]string{a, "--out", thesis}, "--force"},
		{[]string{a, "--out", a, "--force"}, "is the input"},
	} {
		out, code, err := runCLI(t, append(append([]string{"fit"}, c.args...), quickFit...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d\n%s", c.args, code, err, exitUsage, out)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: message lacks %q: %v", c.args, c.want, err)
		}
		if strings.Contains(out, "stage started") {
			t.Errorf("%v: work started before the refusal", c.args)
		}
	}
	sameSnapshot(t, "refused runs", before, snapshot(t, root, ""))
}

// TestFitForceReplacesOnlyEarlierRuns: --force replaces an earlier fit
// output, not one that holds a file of the user's.
func TestFitForceReplacesOnlyEarlierRuns(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 3))
	a := smallLogs(rng, 40, 2, false).write(t, filepath.Join(root, "a.parquet"))
	run := filepath.Join(root, "run")
	for i := range 2 {
		if out, code, err := runCLI(t, append([]string{"fit", a, "--out", run, "--force"}, quickFit...)...); code != 0 {
			t.Fatalf("fit %d: exit %d: %v\n%s", i, code, err, out)
		}
	}
	os.WriteFile(filepath.Join(run, "my-notes.txt"), []byte("x"), 0o644)
	_, code, err := runCLI(t, append([]string{"fit", a, "--out", run, "--force"}, quickFit...)...)
	if code != exitUsage || !strings.Contains(err.Error(), "my-notes.txt") {
		t.Errorf("run with a foreign file: exit %d: %v", code, err)
	}
	if _, err := os.Stat(filepath.Join(run, "my-notes.txt")); err != nil {
		t.Error("the user's file was deleted")
	}
	// explore's --force does not replace a fit output either.
	_, code, err = runCLI(t, "explore", a, "--out", run, "--force")
	if code != exitUsage || !strings.Contains(err.Error(), "termination.json") {
		t.Errorf("explore --force on a fit output: exit %d: %v", code, err)
	}
}

// TestFitFailureCreatesNoParents: a failing run into np/a/b/run leaves no
// directory behind; a successful one makes the parents.
func TestFitFailureCreatesNoParents(t *testing.T) {
	root := t.TempDir()
	bad := filepath.Join(root, "bad.parquet")
	os.WriteFile(bad, []byte("PAR1 not really parquet PAR1"), 0o644)
	out := filepath.Join(root, "np", "a", "b", "run")
	if _, code, err := runCLI(t, "fit", bad, "--out", out); code != exitData {
		t.Fatalf("exit %d: %v", code, err)
	}
	if e, _ := os.ReadDir(root); len(e) != 1 {
		t.Errorf("left behind: %v", e)
	}
	rng := rand.New(rand.NewPCG(1, 4))
	good := smallLogs(rng, 40, 2, false).write(t, filepath.Join(root, "good.parquet"))
	if msg, code, err := runCLI(t, append([]string{"fit", good, "--out", out}, quickFit...)...); code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, msg)
	}
	if _, err := os.Stat(filepath.Join(out, report.ManifestFile)); err != nil {
		t.Error(err)
	}
}

// killedSwap leaves beside run what a --force run killed between its two
// renames leaves: the old output under .run.partial-X.old and the
// unfinished new one under .run.partial-X, with no run.
func killedSwap(t *testing.T, run string) {
	t.Helper()
	stage := filepath.Join(filepath.Dir(run), fmt.Sprintf(".%s.partial-p%d-1", filepath.Base(run), 1<<30))
	if err := os.Rename(run, stage+".old"); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(stage, 0o755)
	os.WriteFile(filepath.Join(stage, report.PolicyFile), []byte("half"), 0o644)
}

// TestKilledForceSwapRecovered: after a kill between the renames of
// --force, `psrlcb inspect DIR` and the next fit restore the previous
// output and say so.
func TestKilledForceSwapRecovered(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 5))
	a := smallLogs(rng, 40, 2, false).write(t, filepath.Join(root, "a.parquet"))
	run := filepath.Join(root, "run")
	if msg, code, err := runCLI(t, append([]string{"fit", a, "--out", run}, quickFit...)...); code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, msg)
	}
	m0, _ := os.ReadFile(filepath.Join(run, report.ManifestFile))

	killedSwap(t, run)
	out, code, err := runCLI(t, "inspect", run)
	if code != 0 || !strings.Contains(out, "restored") || !strings.Contains(out, "lower confidence bound") {
		t.Fatalf("inspect after a killed swap: exit %d: %v\n%s", code, err, out)
	}
	if m, _ := os.ReadFile(filepath.Join(run, report.ManifestFile)); !bytes.Equal(m, m0) {
		t.Error("the previous output was not restored")
	}
	if e, _ := os.ReadDir(root); len(e) != 2 {
		t.Errorf("leftovers: %v", e)
	}

	killedSwap(t, run)
	out, code, err = runCLI(t, append([]string{"fit", a, "--out", run, "--force"}, quickFit...)...)
	if code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("fit after a killed swap: exit %d: %v\n%s", code, err, out)
	}
	if e, _ := os.ReadDir(root); len(e) != 2 {
		t.Errorf("leftovers: %v", e)
	}
}

// TestPanicIsInternalError: a panic in a command exits 1 with "internal
// error" and where to report it, and removes the staged output.
func TestPanicIsInternalError(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "run")
	app := newApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "boom", Action: func(c *cli.Context) error {
		dir, err := createOut(c.App.ErrWriter, out, false, fitOutput, nil)
		if err != nil {
			return err
		}
		defer dir.Abort()
		os.WriteFile(dir.Path(report.PolicyFile), []byte("half"), 0o644)
		var s []int
		s[c.NArg()+3]++ // a bug
		return nil
	}})
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), app, []string{"psrlcb", "boom"}, &stdout, &stderr)
	if code != exitInternal {
		t.Errorf("exit %d, want %d", code, exitInternal)
	}
	msg := stderr.String()
	for _, want := range []string{"internal error", "index out of range [3]", bugReportURL} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if e, _ := os.ReadDir(root); len(e) != 0 {
		t.Errorf("left behind: %v", e)
	}
}

// TestWorkerPanicIsInternalError: a panic inside a parallel loop's worker
// goroutine exits 1 through the same path, with the panic's own value and
// stack, whether the loop returns it (parallel.For) or re-raises it
// (parallel.Do).
func TestWorkerPanicIsInternalError(t *testing.T) {
	for name, loop := range map[string]func(n int) error{
		"For": func(n int) error {
			return parallel.For(context.Background(), 8, 2, func(i int) error {
				var s []int
				s[i+n+3]++ // a bug
				return nil
			})
		},
		"Do": func(n int) error {
			parallel.Do(8, 2, func(i int) {
				var s []int
				s[i+n+3]++ // a bug
			})
			return nil
		},
	} {
		app := newApp()
		app.Commands = append(app.Commands, &cli.Command{Name: "boom", Action: func(c *cli.Context) error {
			return fmt.Errorf("stage: %w", loop(c.NArg()))
		}})
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), app, []string{"psrlcb", "boom"}, &stdout, &stderr)
		if code != exitInternal {
			t.Errorf("%s: exit %d, want %d", name, code, exitInternal)
		}
		msg := stderr.String()
		for _, want := range []string{"psrlcb: internal error: runtime error: index out of range [3]", "reliability_test.go", bugReportURL} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message lacks %q:\n%s", name, want, msg)
			}
		}
	}
}

// TestFitInputMistakes: disagreeing symbol types across files and a file
// given twice are named as such.
func TestFitInputMistakes(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 6))
	l := smallLogs(rng, 20, 2, false)
	a := l.write(t, filepath.Join(root, "a.parquet"))
	for i := range l.rows {
		l.rows[i].episode += 1000
	}
	l.intObs = true
	b := l.write(t, filepath.Join(root, "b.parquet"))
	out := filepath.Join(root, "run")
	_, code, err := runCLI(t, "fit", a, b, "--out", out)
	if code != exitData {
		t.Errorf("mixed observation types: exit %d: %v", code, err)
	} else {
		for _, want := range []string{"a.parquet", "b.parquet", "integer", "string", "observation"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message lacks %q: %v", want, err)
			}
		}
	}
	for _, args := range [][]string{{a, a}, {root + "/a.parquet", a}} {
		_, code, err = runCLI(t, append([]string{"inspect"}, args...)...)
		if code != exitUsage || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("inspect %v: exit %d: %v", args, code, err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("output written")
	}
}

// TestConfigNaturalTypes: unquoted numbers and booleans in YAML and TOML
// set string, numeric and bool flags; an unknown key is a usage error that
// names the key and the nearest flag.
func TestConfigNaturalTypes(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 7))
	a := smallLogs(rng, 40, 2, false).write(t, filepath.Join(root, "a.parquet"))
	for _, c := range []struct{ name, text string }{
		{"fit.yaml", "rank: 2\nalpha: 0.3\nrestarts: 1\nmax-iter: 30\nlambda: 2\nseed: 5\nforce: true\nlog-format: json\n"},
		{"fit-list.yaml", "rank: 2\nalpha: [0.3, 1]\nrestarts: 1\nmax-iter: 30\nlambda: 2\nseed: 5\nforce: true\nlog-format: json\n"},
		{"fit.toml", "rank = 2\nalpha = 0.3\nrestarts = 1\nmax-iter = 30\nlambda = 2.0\nseed = 5\nforce = true\nlog-format = \"json\"\n"},
	} {
		cfg := filepath.Join(root, c.name)
		os.WriteFile(cfg, []byte(c.text), 0o644)
		out := filepath.Join(root, "run")
		// Twice: the second run needs force: true from the file.
		for range 2 {
			msg, code, err := runCLI(t, "fit", a, "--out", out, "--config", cfg)
			if code != 0 {
				t.Fatalf("%s: exit %d: %v\n%s", c.name, code, err, msg)
			}
		}
		m, err := report.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		p := m.Parameters
		if c.name == "fit-list.yaml" && p["alpha_option"] != "0.3,1" {
			t.Errorf("alpha: [0.3, 1] recorded as %v", p["alpha_option"])
		}
		if p["rank"] != float64(2) || (p["alpha"] != 0.3 && c.name != "fit-list.yaml") || p["restarts"] != float64(1) || p["lambda"] != float64(2) || p["seed"] != float64(5) {
			t.Errorf("%s: parameters %v", c.name, p)
		}
	}
	for _, c := range []struct{ text, key, near string }{
		{"rnak: 2\n", "rnak", "rank"},
		{"alpah = 0.1\n", "alpah", "alpha"},
		{"horizn: 4\n", "horizn", "horizon"},
	} {
		ext := ".yaml"
		if strings.Contains(c.text, "=") {
			ext = ".toml"
		}
		cfg := filepath.Join(root, "bad"+ext)
		os.WriteFile(cfg, []byte(c.text), 0o644)
		_, code, err := runCLI(t, "fit", a, "--out", filepath.Join(root, "x"), "--config", cfg)
		if code != exitUsage || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "--"+c.near) {
			t.Errorf("%q: exit %d: %v", c.text, code, err)
		}
	}
	// A missing file is an I/O error naming the flag.
	if _, code, err := runCLI(t, "inspect", a, "--config", filepath.Join(root, "absent.yaml")); code != exitIO || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing config file: exit %d: %v", code, err)
	}
	// A bool flag of inspect, a list of the wrong shape.
	cfg := filepath.Join(root, "inspect.yaml")
	os.WriteFile(cfg, []byte("json: true\nhorizon: 2\n"), 0o644)
	if out, code, err := runCLI(t, "inspect", a, "--config", cfg); code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("inspect with json: true: exit %d: %v\n%s", code, err, out)
	}
	os.WriteFile(cfg, []byte("horizon: [1, 2]\n"), 0o644)
	if _, code, err := runCLI(t, "inspect", a, "--config", cfg); code != exitUsage {
		t.Errorf("list for an int flag: exit %d: %v", code, err)
	}
}

// cancelAt cancels the run when the stage named stage starts (or ends).
type cancelAt struct {
	progress.Nop
	stage  string
	end    bool
	cancel context.CancelFunc
}

func (c cancelAt) StartStage(name string, _ int64) {
	if name == c.stage && !c.end {
		c.cancel()
	}
}

func (c cancelAt) EndStage(name string, _ time.Duration) {
	if name == c.stage && c.end {
		c.cancel()
	}
}

// TestFitCancelledLate: an interrupt during the report stage, or after it
// while the outputs are written, exits 130 and writes nothing.
func TestFitCancelledLate(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 8))
	a := smallLogs(rng, 40, 2, false).write(t, filepath.Join(root, "a.parquet"))
	for _, end := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		o := fitOpts{files: []string{a}, inputs: []string{a}, out: filepath.Join(root, "run"), stderr: &bytes.Buffer{}}
		o.pipe.Estimate.Rank, o.pipe.Estimate.Restarts = 2, 1
		o.pipe.Progress = cancelAt{stage: "report", end: end, cancel: cancel}
		err := runFit(ctx, &bytes.Buffer{}, o)
		if code := exitCode(ctx, err); code != exitInterrupted || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled at the report stage's %s: exit %d: %v", map[bool]string{false: "start", true: "end"}[end], code, err)
		}
		cancel()
		if e, _ := os.ReadDir(root); len(e) != 1 {
			t.Errorf("left behind: %v", e)
		}
	}
}

// TestFitHorizonFarAboveLogs: --horizon 8 on logs of at most 2 steps
// warns, naming both lengths.
func TestFitHorizonFarAboveLogs(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 9))
	a := smallLogs(rng, 40, 2, true).write(t, filepath.Join(root, "a.parquet"))
	out, code, err := runCLI(t, append([]string{"fit", a, "--out", filepath.Join(root, "run"), "--horizon", "8"}, quickFit...)...)
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	if !strings.Contains(out, "warning: the horizon H = 8 is far above the longest logged episode (2 steps)") {
		t.Errorf("no horizon warning:\n%s", out)
	}
	out, code, _ = runCLI(t, append([]string{"fit", a, "--out", filepath.Join(root, "run3"), "--horizon", "3"}, quickFit...)...)
	if code != 0 || strings.Contains(out, "far above") {
		t.Errorf("H = 3 on 2-step logs warned (exit %d):\n%s", code, out)
	}
}

// TestCommandsShareArgumentHandling: every command runs through the
// harness main uses (flags after positionals, usage errors as exit 2).
func TestCommandsShareArgumentHandling(t *testing.T) {
	for _, c := range newCommands() {
		_, code, err := runCLI(t, c.Name, "--no-such-flag")
		if code != exitUsage {
			t.Errorf("%s --no-such-flag: exit %d (%v), want %d", c.Name, code, err, exitUsage)
		}
	}
	// Two apps share no flag state.
	a, b := newApp(), newApp()
	if a.Commands[0].Flags[0] == b.Commands[0].Flags[0] {
		t.Error("apps share flag values")
	}
	_, code, err := runCLI(t, "simulate", "--online", "--pomdp", examplePOMDP)
	if code != exitUsage || !strings.Contains(err.Error(), "simulate-online") {
		t.Errorf("simulate --online: exit %d: %v", code, err)
	}
}

// TestSimulateOnlinePlotPlace: --plot may not overwrite the model nor lie
// inside --out (refused before any work).
func TestSimulateOnlinePlotPlace(t *testing.T) {
	root := t.TempDir()
	model := filepath.Join(root, "tiger.pomdp")
	b, err := os.ReadFile(examplePOMDP)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(model, b, 0o644)
	out := filepath.Join(root, "sim")
	for _, c := range []struct{ plot, want string }{
		{model, "is the model file"},
		{filepath.Join(out, "plot.svg"), "inside --out"},
		{root, "is a directory"},
	} {
		_, code, err := runCLI(t, "simulate-online", "--pomdp", model, "--horizon", "2", "--out", out, "--plot", c.plot)
		if code != exitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--plot %s: exit %d: %v", c.plot, code, err)
		}
	}
	if got, _ := os.ReadFile(model); !bytes.Equal(got, b) {
		t.Error("the model was overwritten")
	}
	if e, _ := os.ReadDir(root); len(e) != 1 {
		t.Errorf("left behind: %v", e)
	}
}
