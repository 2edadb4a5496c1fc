package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/psrlcb/psrlcb/report"
)

// memWrite puts data at the memfs:// URL name.
func memWrite(t *testing.T, name string, data []byte) {
	t.Helper()
	fs, err := filesystem.New(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if err := filesystem.Write(context.Background(), fs, name, data); err != nil {
		t.Fatal(err)
	}
}

// memRead reads the memfs:// URL name.
func memRead(t *testing.T, name string) []byte {
	t.Helper()
	fs, err := filesystem.New(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	b, err := filesystem.Read(context.Background(), fs, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestObjectStoreInputsAndOutput: logs read from an object store (Beam's
// in-memory filesystem stands in for gs:// and s3://) and an output
// written there give the same files as the local run, byte for byte;
// writing again needs --force, and --force refuses a prefix holding
// objects fit does not write.
func TestObjectStoreInputsAndOutput(t *testing.T) {
	logs, err := os.ReadFile(tigerLogs)
	if err != nil {
		t.Fatal(err)
	}
	memWrite(t, "memfs://bucket/logs/tiger-logs.parquet", logs)
	common := []string{"--rank", "2", "--restarts", "1", "--max-iter", "8", "--alpha", "0.3"}

	localOut := filepath.Join(t.TempDir(), "run")
	c, args := config(t, append(common, "--out", localOut, tigerLogs)...)
	if err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	c, args = config(t, append(common, "--out", "memfs://bucket/runs/a", "memfs://bucket/logs/")...)
	if err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range report.OutputFiles() {
		if name == report.ComparedFile {
			continue // written only with --compare
		}
		want, err := os.ReadFile(filepath.Join(localOut, name))
		if name == report.ControllerFile && errors.Is(err, os.ErrNotExist) {
			continue // written only for a policy of the belief planner
		}
		if err != nil {
			t.Fatal(err)
		}
		if name == report.ManifestFile || name == report.HTMLFile {
			// They name the input's path; the tables must match exactly.
			if len(memRead(t, "memfs://bucket/runs/a/"+name)) == 0 {
				t.Errorf("%s is empty", name)
			}
			continue
		}
		if got := memRead(t, "memfs://bucket/runs/a/"+name); !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes from the object store, %d locally", name, len(got), len(want))
		}
	}
	c, args = config(t, append(common, "--out", "memfs://bucket/runs/a", "memfs://bucket/logs/tiger-logs.parquet")...)
	var ue usageError
	if err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.As(err, &ue) {
		t.Fatalf("writing over an output without --force: %v", err)
	}
	c, args = config(t, append(common, "--force", "--out", "memfs://bucket/runs/a", "memfs://bucket/logs/tiger-logs.parquet")...)
	if err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("--force over an earlier output: %v", err)
	}
	memWrite(t, "memfs://bucket/runs/a/notes.txt", []byte("mine"))
	if err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.As(err, &ue) {
		t.Fatalf("--force over a prefix with a foreign object: %v", err)
	}
	if string(memRead(t, "memfs://bucket/runs/a/notes.txt")) != "mine" {
		t.Fatal("the foreign object was touched")
	}
	c, args = config(t, append(common, "--out", "memfs://bucket/runs/b", "memfs://bucket/none/")...)
	if err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errRemote) || exitCode(context.Background(), err) != exitIO {
		t.Fatalf("a prefix with no logs: %v", err)
	}
}
