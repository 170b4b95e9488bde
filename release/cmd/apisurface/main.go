// Command apisurface counts the exported top-level names of otelqueue's
// public packages: functions without a receiver, types, and each constant
// and variable name, in the non-test files of every package of the root
// modules (the root and controllerruntime) but internal/ ones. Methods and fields are not counted: they are
// read from their type. Issue 38 holds the package otelqueue to 60 and all
// public packages together to 180.
//
//	go run ./cmd/apisurface [-names] [module dir...]   (from release/; .. and ../controllerruntime by default)
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	names := flag.Bool("names", false, "print every name")
	undocumented := flag.Bool("undocumented", false, "print, and exit 1 for, the names that no Example function and no doc (README.md, docs/*.md) uses")
	maxCore := flag.Int("max-otelqueue", 0, "exit 1 when package otelqueue exports more names (0: no bound)")
	maxTotal := flag.Int("max-total", 0, "exit 1 when the public packages export more names together (0: no bound)")
	longer := flag.Int("longer", 0, "also print the functions of the public packages longer than this many lines (0: none)")
	flag.Parse()
	roots := flag.Args()
	if len(roots) == 0 {
		roots = []string{"..", "../controllerruntime"}
	}
	counts := map[string][]string{}
	for _, root := range roots {
		c, err := count(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apisurface:", err)
			os.Exit(1)
		}
		for dir, names := range c {
			p := filepath.ToSlash(filepath.Join(filepath.Base(filepath.Clean(root)), dir))
			if filepath.Clean(root) == ".." {
				p = dir
			}
			counts[p] = names
		}
	}
	pkgs := make([]string, 0, len(counts))
	for p := range counts {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	total := 0
	for _, p := range pkgs {
		total += len(counts[p])
		fmt.Printf("%-28s %4d\n", p, len(counts[p]))
		if *names {
			sort.Strings(counts[p])
			fmt.Printf("    %s\n", strings.Join(counts[p], " "))
		}
	}
	fmt.Printf("%-28s %4d\n", "total", total)
	if *longer > 0 {
		for _, root := range roots {
			long, err := longFuncs(root, *longer)
			if err != nil {
				fmt.Fprintln(os.Stderr, "apisurface:", err)
				os.Exit(1)
			}
			for _, l := range long {
				fmt.Println("long:", l)
			}
		}
	}
	failed := false
	if n := len(counts["otelqueue"]); *maxCore > 0 && n > *maxCore {
		fmt.Printf("package otelqueue exports %d names, over %d: move what is not the core to a package of its own, or unexport it\n", n, *maxCore)
		failed = true
	}
	if *maxTotal > 0 && total > *maxTotal {
		fmt.Printf("the public packages export %d names, over %d\n", total, *maxTotal)
		failed = true
	}
	if failed {
		defer os.Exit(1)
	}
	if *undocumented {
		missing, err := undocumentedNames(roots[0], counts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apisurface:", err)
			os.Exit(1)
		}
		for _, m := range missing {
			fmt.Println("undocumented:", m)
		}
		if len(missing) > 0 {
			os.Exit(1)
		}
	}
}

// codeOf returns the code of a Markdown text: its fenced blocks and its
// code spans, one per line.
func codeOf(md string) string {
	var b strings.Builder
	for i, part := range strings.Split(md, "```") {
		if i%2 == 1 {
			b.WriteString(part + "\n")
			continue
		}
		spans := strings.Split(part, "`")
		for j := 1; j < len(spans); j += 2 {
			b.WriteString(spans[j] + "\n")
		}
	}
	return b.String()
}

// undocumentedNames returns pkg.Name for each name that no doc under the
// repository root (README.md, docs/*.md) writes in code (between
// backquotes) and no Example function of the repository uses (an Example
// in its own package may use it unqualified).
func undocumentedNames(root string, counts map[string][]string) ([]string, error) {
	var docs strings.Builder
	paths, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	paths = append(paths, filepath.Join(root, "README.md"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		docs.WriteString(codeOf(string(b)))
	}
	examples := map[string]string{} // package directory -> its example files' text
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "example") && strings.HasSuffix(d.Name(), "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			examples[filepath.ToSlash(rel)] += string(b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var all strings.Builder
	for _, text := range examples {
		all.WriteString(text)
	}
	var missing []string
	pkgs := make([]string, 0, len(counts))
	for p := range counts {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		short := p[strings.LastIndex(p, "/")+1:]
		own := examples[strings.TrimPrefix(p, "controllerruntime/")] + examples[p]
		for _, n := range counts[p] {
			q := short + "." + n
			word := regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\b`)
			if word.MatchString(docs.String()) || strings.Contains(all.String(), q) || word.MatchString(own) {
				continue
			}
			missing = append(missing, q)
		}
	}
	return missing, nil
}

// publicFiles calls fn with each non-test Go file, parsed, of the public
// packages under root (not internal/, testdata/, another module, or a
// main package), and its path from root.
func publicFiles(root string, fn func(rel string, fset *token.FileSet, f *ast.File)) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || base == "internal" || base == "testdata" ||
				fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir // another module, or not public
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			fn(filepath.ToSlash(rel), fset, f)
		}
		return nil
	})
}

// count returns, per package directory under root, its exported names.
func count(root string) (map[string][]string, error) {
	counts := map[string][]string{}
	err := publicFiles(root, func(rel string, _ *token.FileSet, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil && decl.Name.IsExported() {
					counts[dir] = append(counts[dir], decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						if spec.Name.IsExported() {
							counts[dir] = append(counts[dir], spec.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							if n.IsExported() {
								counts[dir] = append(counts[dir], n.Name)
							}
						}
					}
				}
			}
		}
	})
	return counts, err
}

// longFuncs returns "lines path:line name" for each function of the
// public packages under root longer than n lines, the longest first.
func longFuncs(root string, n int) ([]string, error) {
	type fn struct {
		lines int
		where string
	}
	var out []fn
	err := publicFiles(root, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
				if lines := end - start + 1; lines > n {
					out = append(out, fn{lines, fmt.Sprintf("%d %s:%d %s", lines, rel, start, fd.Name.Name)})
				}
			}
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].lines > out[j].lines })
	var s []string
	for _, f := range out {
		s = append(s, f.where)
	}
	return s, err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
