package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type rec struct {
	K int    `json:"k"`
	S string `json:"s"`
}

// Records of the current fingerprint come back in order; others are
// skipped; fresh truncates; a damaged line is an error naming the line.
func TestWriteReadResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "ck.jsonl")
	if got, err := Read[rec](path, "a", "row"); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	w, err := Create[rec](path, "a", "row", false)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(rec{1, "x"})
	w.Close()
	w, _ = Create[rec](path, "b", "row", false)
	w.Add(rec{2, "y"})
	w.Close()
	w, _ = Create[rec](path, "a", "row", false)
	w.Add(rec{3, "z"})
	w.Close()
	got, err := Read[rec](path, "a", "row")
	if err != nil || len(got) != 2 || got[0] != (rec{1, "x"}) || got[1] != (rec{3, "z"}) {
		t.Fatalf("read %v, %v", got, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), `{"fp":"a","row":{"k":1,"s":"x"}}`) {
		t.Errorf("line format %q", b)
	}
	w, _ = Create[rec](path, "a", "row", true)
	w.Close()
	if got, _ := Read[rec](path, "a", "row"); len(got) != 0 {
		t.Errorf("fresh kept %v", got)
	}
	os.WriteFile(path, []byte("{\"fp\":\"a\",\"row\":{\"k\":1}}\nnot json\n"), 0o644)
	if _, err := Read[rec](path, "a", "row"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("damaged line: %v", err)
	}
}
