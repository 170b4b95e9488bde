// Package procstatfs lets otelqueue's tests outside package procstat (the
// exporter tests of the e2e module) read a fake cgroup file system:
// package procstat sets Option when it is initialized. Nothing else uses it.
package procstatfs

import "io/fs"

// Option returns a procstat.Option (as any: this package cannot import
// procstat) that makes the instruments read the cgroup files in fsys, a
// file system rooted at "/" with the process's cgroup and mountinfo files
// at cgroupFile and mountinfoFile (names of fsys, such as
// "proc/self/cgroup").
var Option func(fsys fs.FS, cgroupFile, mountinfoFile string) any
