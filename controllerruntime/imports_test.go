package controllerruntime_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoInternalImportsOfTheRootModule: the library packages of this
// module import only the root module's public API. Its internal packages
// may change in any release of the root module, and a program that
// requires another version of it than this module was tested with would
// break on them.
func TestNoInternalImportsOfTheRootModule(t *testing.T) {
	const internal = "github.com/otelqueue/otelqueue/internal/"
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, internal) {
				t.Errorf("%s imports %s: use the root module's public API", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}
