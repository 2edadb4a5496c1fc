package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/psrlcb/psrlcb/report"
)

// Inputs and --out may be object-store URLs that Beam's filesystems read
// and write (gs://, s3://; memfs:// in tests). The driver copies the log
// objects to a local directory before reading them (Parquet is read by
// row group, which needs random access), and writes the output directory
// locally, then uploads its files with manifest.json last: an output
// prefix without manifest.json is incomplete, and a reader that finds
// manifest.json finds every file it lists.

// errRemote: an object store could not be read or written.
var errRemote = errors.New("object store")

// isURL says whether p names an object through a Beam filesystem scheme
// (anything but a local path).
func isURL(p string) bool {
	i := strings.Index(p, "://")
	return i > 0 && !strings.ContainsAny(p[:i], "/\\")
}

// fetchInputs copies the objects named by URL arguments (an object, a glob
// such as gs://b/logs/*.parquet, or a prefix ending in / for its
// *.parquet objects) to files under dir, mirroring their URLs (gs/b/…),
// and returns the arguments with the URLs replaced by those files.
func fetchInputs(ctx context.Context, args []string, dir string) ([]string, error) {
	var out []string
	for _, a := range args {
		if !isURL(a) {
			out = append(out, a)
			continue
		}
		fs, err := filesystem.New(ctx, a)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errRemote, a, err)
		}
		pattern := a
		if strings.HasSuffix(a, "/") {
			pattern = a + "*.parquet"
		}
		names, err := fs.List(ctx, pattern)
		if err == nil && len(names) == 0 {
			err = errors.New("no object matches")
		}
		if err != nil {
			fs.Close()
			return nil, fmt.Errorf("%w: %s: %v", errRemote, a, err)
		}
		slices.Sort(names)
		for _, name := range names {
			dst := filepath.Join(dir, mirrorPath(name))
			if err := copyObject(ctx, fs, name, dst); err != nil {
				fs.Close()
				return nil, fmt.Errorf("%w: %s: %v", errRemote, name, err)
			}
			out = append(out, dst)
		}
		fs.Close()
	}
	return out, nil
}

// mirrorPath is the relative local path of an object URL:
// gs://bucket/a/b.parquet → gs/bucket/a/b.parquet.
func mirrorPath(url string) string {
	scheme, rest, _ := strings.Cut(url, "://")
	var parts []string
	for _, p := range strings.Split(rest, "/") {
		if p != "" && p != "." && p != ".." {
			parts = append(parts, p)
		}
	}
	return filepath.Join(append([]string{scheme}, parts...)...)
}

func copyObject(ctx context.Context, fs filesystem.Interface, name, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	r, err := fs.OpenRead(ctx, name)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// publish uploads the output files in local to the prefix out, manifest.json
// last. An existing output there is replaced only with force, and only when
// it is an earlier output of fit (manifest.json and only the files fit
// writes); its manifest.json is removed first, so the prefix never shows a
// manifest beside files of another run.
func publish(ctx context.Context, local, out string, force bool) error {
	fs, err := filesystem.New(ctx, out)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errRemote, out, err)
	}
	defer fs.Close()
	prefix := strings.TrimRight(out, "/") + "/"
	existing, err := remoteExisting(ctx, fs, out, force)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		rm, ok := fs.(filesystem.Remover)
		if !ok {
			return fmt.Errorf("%w: %s: the file system cannot remove objects", errRemote, out)
		}
		// The manifest first: from here the prefix reads as incomplete.
		if err := rm.Remove(ctx, prefix+report.ManifestFile); err != nil {
			return fmt.Errorf("%w: %s: %v", errRemote, out, err)
		}
		for _, e := range existing {
			if e != prefix+report.ManifestFile {
				if err := rm.Remove(ctx, e); err != nil {
					return fmt.Errorf("%w: %s: %v", errRemote, e, err)
				}
			}
		}
	}
	ents, err := os.ReadDir(local)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && e.Name() != report.ManifestFile {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	names = append(names, report.ManifestFile)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(local, n))
		if err != nil {
			return err
		}
		if err := filesystem.Write(ctx, fs, prefix+n, b); err != nil {
			return fmt.Errorf("%w: %s%s: %v", errRemote, prefix, n, err)
		}
	}
	return nil
}

// checkRemoteOut fails, before any work, when the prefix out holds objects
// that publish would refuse to replace.
func checkRemoteOut(ctx context.Context, out string, force bool) error {
	fs, err := filesystem.New(ctx, out)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errRemote, out, err)
	}
	defer fs.Close()
	_, err = remoteExisting(ctx, fs, out, force)
	return err
}

// remoteExisting lists the objects under the prefix out, and refuses them
// unless force is set and they are an earlier output of fit.
func remoteExisting(ctx context.Context, fs filesystem.Interface, out string, force bool) ([]string, error) {
	prefix := strings.TrimRight(out, "/") + "/"
	existing, err := fs.List(ctx, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errRemote, out, err)
	}
	if len(existing) == 0 {
		return nil, nil
	}
	if !force {
		return nil, usagef("--out %s already holds %d objects; --force replaces an earlier output of fit", out, len(existing))
	}
	known := report.OutputFiles()
	hasManifest := false
	for _, e := range existing {
		name := strings.TrimPrefix(e, prefix)
		hasManifest = hasManifest || name == report.ManifestFile
		if !slices.Contains(known, name) {
			return nil, usagef("--out %s holds %s, which fit does not write: refusing to replace it", out, e)
		}
	}
	if !hasManifest {
		return nil, usagef("--out %s holds objects but no %s: not an output of fit, refusing to replace it", out, report.ManifestFile)
	}
	return existing, nil
}
