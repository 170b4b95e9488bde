package testutil

import (
	"bytes"
	"os"
	"testing"
)

// Generated checks that the checked-in file at path is want, its rendering
// from its source, or, with update (a test's -update flag), writes want
// there, keeping the file's mode. regenerate is the command that rewrites
// it, for the failure's message.
func Generated(t testing.TB, path string, want []byte, update bool, regenerate string) {
	t.Helper()
	if update {
		mode := os.FileMode(0o644)
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode()
		}
		if err := os.WriteFile(path, want, mode); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not its rendering from its source: run %s", path, regenerate)
	}
}
