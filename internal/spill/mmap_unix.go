//go:build linux || darwin || freebsd

package spill

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// dropPages unmaps the pages of a shared file mapping from the process;
// their contents stay in the file.
func dropPages(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }

func unmap(b []byte) error { return unix.Munmap(b) }

// InMemoryFS says whether dir lies on a file system kept in memory
// (tmpfs, ramfs), where a spill file saves no memory.
func InMemoryFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	return int64(st.Type) == tmpfsMagic || int64(st.Type) == ramfsMagic
}
