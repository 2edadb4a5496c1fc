package outdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/errkind"
)

// fitLike are the options of a command whose outputs hold manifest.json
// and Arrow tables.
func fitLike(force bool, inputs ...string) Options {
	return Options{Force: force, Command: "psrlcb fit", Marker: "manifest.json", Known: []string{"manifest.json", "*.arrow", "report.html"}, Inputs: inputs}
}

func commit(t *testing.T, final string, o Options, files ...string) {
	t.Helper()
	d, err := Create(final, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(d.Path(f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestOutDirCommitAndAbort(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "run")
	o, err := Create(final, fitLike(false))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(o.Path("manifest.json"), []byte("{}"), 0o644)
	os.WriteFile(o.Path("x.arrow"), []byte("1"), 0o644)
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatal("final directory visible before commit")
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(final, fitLike(false)); !errors.Is(err, ErrExists) {
		t.Fatalf("existing directory accepted without force: %v", err)
	}
	o2, err := Create(final, fitLike(true))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(o2.Path("y.arrow"), []byte("2"), 0o644)
	o2.Abort()
	if _, err := os.Stat(filepath.Join(final, "x.arrow")); err != nil {
		t.Fatal("aborted run damaged the previous result")
	}
	commit(t, final, fitLike(true), "manifest.json", "y.arrow")
	if _, err := os.Stat(filepath.Join(final, "x.arrow")); !os.IsNotExist(err) {
		t.Error("forced replace kept old files")
	}
	if e := entries(t, root); len(e) != 1 {
		t.Errorf("leftovers in parent: %v", e)
	}
}

// TestForceRefusesForeignDirectories: --force replaces only an earlier
// output of the same command, and the refusal names what is in the way.
func TestForceRefusesForeignDirectories(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"thesis", []string{"chapter1.tex", "notes.txt"}, "chapter1.tex"},
		{"empty", nil, "empty"},
		{"run-plus", []string{"manifest.json", "policy.arrow", "mine.txt"}, "mine.txt"},
		{"logs", []string{"a.parquet", "b.parquet"}, "a.parquet"},
	}
	for _, c := range cases {
		dir := filepath.Join(root, c.name)
		os.MkdirAll(dir, 0o755)
		for _, f := range c.files {
			os.WriteFile(filepath.Join(dir, f), []byte("keep"), 0o644)
		}
		_, err := Create(dir, fitLike(true))
		if !errors.Is(err, ErrExists) || !errors.Is(err, errkind.Options) {
			t.Errorf("%s: err %v, want ErrExists (options kind)", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: message does not name %q: %v", c.name, c.want, err)
		}
		if got := entries(t, dir); len(got) != len(c.files) {
			t.Errorf("%s: directory changed: %v", c.name, got)
		}
	}
	// A subdirectory in a run is foreign too.
	dir := filepath.Join(root, "run-sub")
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{}"), 0o644)
	if _, err := Create(dir, fitLike(true)); err == nil || !strings.Contains(err.Error(), "data") {
		t.Errorf("run with a subdirectory: %v", err)
	}
	// A symbolic link to an earlier output.
	real := filepath.Join(root, "real")
	commit(t, real, fitLike(false), "manifest.json")
	link := filepath.Join(root, "link")
	os.Symlink(real, link)
	if _, err := Create(link, fitLike(true)); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("link at --out: %v", err)
	}
	// A file of the user's added to the earlier output during the run.
	d, err := Create(real, fitLike(true))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(real, "added.txt"), []byte("x"), 0o644)
	if err := d.Commit(); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "added.txt") {
		t.Errorf("commit over a directory that gained a foreign file: %v", err)
	}
	d.Abort()
	if _, err := os.Stat(filepath.Join(real, "added.txt")); err != nil {
		t.Error("the added file was deleted")
	}
	// A file at the output's place.
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := Create(file, fitLike(true)); !errors.Is(err, ErrExists) {
		t.Errorf("file at --out: %v", err)
	}
	// Nothing staged was left by the refusals.
	for _, e := range entries(t, root) {
		if strings.Contains(e, partialTag) {
			t.Errorf("staging directory left: %s", e)
		}
	}
}

// TestOutOverlappingInputs: an output that is, contains or lies inside an
// input, or is the current directory, is refused, also through symbolic
// links and relative paths.
func TestOutOverlappingInputs(t *testing.T) {
	root := t.TempDir()
	logs := filepath.Join(root, "logs")
	os.MkdirAll(logs, 0o755)
	file := filepath.Join(logs, "a.parquet")
	os.WriteFile(file, []byte("x"), 0o644)
	link := filepath.Join(root, "link")
	if err := os.Symlink(logs, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, c := range []struct {
		out    string
		inputs []string
	}{
		{logs, []string{logs}},                       // is the input directory
		{"logs", []string{file}},                     // contains an input file (relative)
		{root, []string{file}},                       // contains it deeper
		{filepath.Join(logs, "run"), []string{logs}}, // inside an input directory
		{filepath.Join(link, "run"), []string{logs}}, // the same through a link
		{filepath.Join(logs, "run"), []string{link}}, // input named through a link
		{file, []string{file}},                       // is the input file
		{".", nil},                                   // the current directory
		{"./", nil},                                  //
		{"..", nil},                                  // its parent
		{filepath.Join(link, "..", "x", ".."), nil},  // the current directory spelt oddly
		{"/", nil},                                   // the root
	} {
		_, err := Create(c.out, fitLike(true, c.inputs...))
		if !errors.Is(err, ErrOverlap) && !errors.Is(err, ErrExists) {
			t.Errorf("--out %s with inputs %v: err %v, want a refusal", c.out, c.inputs, err)
		}
	}
	if got := entries(t, logs); len(got) != 1 {
		t.Errorf("input directory changed: %v", got)
	}
	// Beside the inputs is fine.
	d, err := Create(filepath.Join(root, "run"), fitLike(false, logs, file))
	if err != nil {
		t.Fatalf("output beside the inputs refused: %v", err)
	}
	d.Abort()
}

// TestNothingCreatedBeforeCommit: missing parents appear only on Commit.
func TestNothingCreatedBeforeCommit(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "np", "a", "b", "run")
	d, err := Create(final, fitLike(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "np")); !os.IsNotExist(err) {
		t.Fatal("parent created before the run succeeded")
	}
	d.Abort()
	if e := entries(t, root); len(e) != 0 {
		t.Fatalf("aborted run left %v", e)
	}
	// A run killed while staging there left its staging directory in
	// root; the next run into the same place removes it.
	os.Mkdir(filepath.Join(root, deadStage("run")), 0o755)
	commit(t, final, fitLike(false), "manifest.json")
	if _, err := os.Stat(filepath.Join(final, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if e := entries(t, root); len(e) != 1 || e[0] != "np" {
		t.Errorf("parent holds %v", e)
	}
}

// deadStage is the name of a staging directory of a process that does not
// run (no process has a pid this large).
func deadStage(base string) string {
	return fmt.Sprintf(".%s%sp%d-%d", base, partialTag, 1<<30, 12345)
}

// TestRecoverKilledSwap: the states a kill during a --force replace can
// leave, repaired by the next run (and by Recover alone).
func TestRecoverKilledSwap(t *testing.T) {
	mk := func(dir string, files ...string) {
		os.MkdirAll(dir, 0o755)
		for _, f := range files {
			os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
		}
	}
	t.Run("between the renames", func(t *testing.T) {
		root := t.TempDir()
		final := filepath.Join(root, "run")
		stage := filepath.Join(root, deadStage("run"))
		mk(stage+".old", "manifest.json", "old.arrow")
		mk(stage, "manifest.json", "new.arrow")
		notes, err := Recover(final)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(final, "old.arrow")); err != nil {
			t.Fatalf("old output not restored: %v (notes %v)", err, notes)
		}
		if e := entries(t, root); len(e) != 1 {
			t.Errorf("left %v", e)
		}
		if len(notes) != 2 || !strings.Contains(notes[0], "restored") {
			t.Errorf("notes %v", notes)
		}
	})
	t.Run("while removing the old output", func(t *testing.T) {
		root := t.TempDir()
		final := filepath.Join(root, "run")
		mk(final, "manifest.json", "new.arrow")
		mk(filepath.Join(root, deadStage("run"))+".old", "manifest.json")
		d, err := Create(final, fitLike(true))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Abort()
		if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "removed") {
			t.Errorf("notes %v", d.Notes)
		}
		if e := entries(t, root); len(e) != 2 { // run and this run's staging
			t.Errorf("left %v", e)
		}
		if _, err := os.Stat(filepath.Join(final, "new.arrow")); err != nil {
			t.Error("the new output was touched")
		}
	})
	t.Run("another output in the same parent", func(t *testing.T) {
		root := t.TempDir()
		other := filepath.Join(root, "other")
		stage := filepath.Join(root, deadStage("other"))
		mk(stage+".old", "manifest.json", "old.arrow")
		mk(stage, "manifest.json")
		d, err := Create(filepath.Join(root, "run"), fitLike(false))
		if err != nil {
			t.Fatal(err)
		}
		d.Abort()
		if _, err := os.Stat(filepath.Join(other, "old.arrow")); err != nil {
			t.Errorf("other output not restored: %v (notes %v)", err, d.Notes)
		}
		if e := entries(t, root); len(e) != 1 {
			t.Errorf("left %v", e)
		}
	})
	t.Run("stale staging", func(t *testing.T) {
		root := t.TempDir()
		final := filepath.Join(root, "run")
		mk(filepath.Join(root, deadStage("run")), "policy.arrow")
		live := filepath.Join(root, fmt.Sprintf(".run%sp%d-7", partialTag, os.Getpid()))
		mk(live)
		other := filepath.Join(root, deadStage("other"))
		mk(other)
		d, err := Create(final, fitLike(false))
		if err != nil {
			t.Fatal(err)
		}
		d.Abort()
		if len(d.Notes) != 2 {
			t.Errorf("notes %v", d.Notes)
		}
		got := entries(t, root)
		if len(got) != 1 {
			t.Errorf("left %v, want only the running process's staging", got)
		}
	})
}
