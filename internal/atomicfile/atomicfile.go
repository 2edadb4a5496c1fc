// Package atomicfile writes files so that a reader never sees a partial
// one: the bytes go to a temporary file in the same directory, which is
// synced and renamed over the destination only after a successful write.
// A failed write leaves nothing behind.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write creates path by calling write on a temporary file beside it. The
// file ends up readable by everyone (0644): results are meant to be shared.
func Write(path string, write func(f *os.File) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteBytes creates path holding data.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
