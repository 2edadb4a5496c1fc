package outdir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOutDirCommitAndAbort(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "run")
	o, err := Create(final, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(o.Path("x"), []byte("1"), 0o644)
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatal("final directory visible before commit")
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(final, false); err == nil {
		t.Fatal("existing directory accepted without force")
	}
	o2, err := Create(final, true)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(o2.Path("y"), []byte("2"), 0o644)
	o2.Abort()
	if _, err := os.Stat(filepath.Join(final, "x")); err != nil {
		t.Fatal("aborted run damaged the previous result")
	}
	o3, _ := Create(final, true)
	os.WriteFile(o3.Path("y"), []byte("3"), 0o644)
	if err := o3.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(final, "x")); !os.IsNotExist(err) {
		t.Error("forced replace kept old files")
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("leftovers in parent: %v", entries)
	}
}
