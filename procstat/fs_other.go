//go:build !linux

package procstat

import "io/fs"

// defaultFS returns nil: cgroups are Linux's, and a Sample's Cgroup stays
// unknown elsewhere.
func defaultFS() fs.FS { return nil }
