package explore

import (
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
)

func extOf(path string) string {
	e := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if e == "" {
		return "svg"
	}
	return e
}

// writeCanvas writes the image atomically (temporary file, then rename).
func writeCanvas(path string, img vg.CanvasWriterTo) error {
	return atomicfile.Write(path, func(f *os.File) error {
		_, err := img.WriteTo(f)
		return err
	})
}
