package explore

import (
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
)

func extOf(path string) string {
	e := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if e == "" {
		return "svg"
	}
	return e
}

// writeCanvas writes the image atomically (temporary file, then rename).
func writeCanvas(path string, img vg.CanvasWriterTo) (err error) {
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
	if _, err = img.WriteTo(f); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp, 0o644); err != nil { // CreateTemp makes 0600; plots are shared
		return err
	}
	return os.Rename(tmp, path)
}
