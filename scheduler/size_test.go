//go:build amd64 || arm64 || ppc64 || ppc64le || riscv64 || s390x || loong64 || mips64 || mips64le

package scheduler

import (
	"testing"
	"unsafe"
)

// TestEntrySize guards the memory of a pending key: an entry with a string
// key is 64 bytes, a size class of Go's allocator; one field more would
// put every key in the 80-byte class (scheduler.md, "Memory per pending
// key"). What only some runs need goes in runExtras. The sizes are those
// of 64-bit platforms (the build constraint).
func TestEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(entry[string]{}); got != 64 {
		t.Errorf("entry[string] is %d bytes, want 64", got)
	}
}
