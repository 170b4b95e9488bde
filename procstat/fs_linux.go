package procstat

import (
	"io/fs"
	"os"
)

// rootFS is the file system the cgroup files are read from.
var rootFS = os.DirFS("/")

// defaultFS returns the file system a Reader reads the cgroup files from
// unless a test gives it another one.
func defaultFS() fs.FS { return rootFS }
