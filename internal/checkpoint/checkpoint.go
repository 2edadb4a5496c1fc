// Package checkpoint keeps a study's finished results in an append-only
// JSON-lines file, so that a stopped study resumes where it was. Each line
// is {"fp": FINGERPRINT, FIELD: RECORD}; only the lines of the current
// fingerprint (the study's settings) are read back.
package checkpoint

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Read returns the records of path stored under fp in field, in file order
// (none when the file does not exist).
func Read[T any](path, fp, field string) ([]T, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		r, ok, err := decodeLine[T](sc.Bytes(), fp, field)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w (delete it or pass --fresh)", path, line, err)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// decodeLine decodes the record in field of one line; ok is false for a
// line stored under another fingerprint than fp.
func decodeLine[T any](b []byte, fp, field string) (r T, ok bool, err error) {
	var l map[string]json.RawMessage
	var lfp string
	err = json.Unmarshal(b, &l)
	if err == nil {
		err = json.Unmarshal(l["fp"], &lfp)
	}
	if err != nil || lfp != fp {
		return r, false, err
	}
	if err := json.Unmarshal(l[field], &r); err != nil {
		return r, false, err
	}
	return r, true, nil
}

// Writer appends records to a checkpoint file.
type Writer[T any] struct {
	f         *os.File
	fp, field string
}

// Create opens path for appending records under fp in field (truncating it
// when fresh), making its directory.
func Create[T any](path, fp, field string, fresh bool) (*Writer[T], error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if fresh {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer[T]{f: f, fp: fp, field: field}, nil
}

// Add appends one record as a line.
func (w *Writer[T]) Add(r T) error {
	b, err := json.Marshal(map[string]any{"fp": w.fp, w.field: r})
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

// Close closes the file.
func (w *Writer[T]) Close() error { return w.f.Close() }
