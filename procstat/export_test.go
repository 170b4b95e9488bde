package procstat

import "io/fs"

// NewFSReader returns a Reader of the cgroup files in fsys, a file system
// rooted at "/", with the process's cgroup and mountinfo files at
// cgroupFile and mountinfoFile (names of fsys, such as "proc/self/cgroup").
func NewFSReader(fsys fs.FS, cgroupFile, mountinfoFile string) *Reader {
	return &Reader{fsys: fsys, cgroupFile: cgroupFile, mountinfoFile: mountinfoFile}
}

// WithReader makes the instruments read r instead of the package's Reader.
func WithReader(r *Reader) Option {
	return optionFunc(func(c *config) { c.reader = r })
}
