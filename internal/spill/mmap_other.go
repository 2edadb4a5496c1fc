//go:build !(linux || darwin || freebsd)

package spill

import "os"

func mapFile(*os.File, int) ([]byte, error) { return nil, ErrUnsupported }

func dropPages([]byte) error { return nil }

func unmap([]byte) error { return nil }

// InMemoryFS says whether dir lies on a file system kept in memory; it
// cannot tell here.
func InMemoryFS(string) bool { return false }
