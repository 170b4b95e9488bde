package procstat

// NewFSReader and WithReader are newFSReader and withReader, for the
// package's tests.
var (
	NewFSReader = newFSReader
	WithReader  = withReader
)
