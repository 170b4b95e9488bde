package procstat

import (
	"io/fs"

	"github.com/otelqueue/otelqueue/internal/procstatfs"
)

// newFSReader returns a Reader of the cgroup files in fsys, a file system
// rooted at "/", with the process's cgroup and mountinfo files at
// cgroupFile and mountinfoFile (names of fsys, such as "proc/self/cgroup").
func newFSReader(fsys fs.FS, cgroupFile, mountinfoFile string) *Reader {
	return &Reader{fsys: fsys, cgroupFile: cgroupFile, mountinfoFile: mountinfoFile}
}

// withReader makes the instruments read r instead of the package's Reader.
func withReader(r *Reader) Option {
	return optionFunc(func(c *config) { c.reader = r })
}

func init() {
	procstatfs.Option = func(fsys fs.FS, cgroupFile, mountinfoFile string) any {
		return withReader(newFSReader(fsys, cgroupFile, mountinfoFile))
	}
}
