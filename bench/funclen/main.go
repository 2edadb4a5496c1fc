// Command funclen prints the length statistics of the functions of a Go
// module's non-test, non-generated source: how many exceed 80 and 100
// lines, the median and the 90th percentile, and the longest. A
// function's length is the lines from its func keyword to its closing
// brace. With -fail-over N it exits with status 1 when a function is
// longer than N lines (.ci/run uses -fail-over 80).
//
// Usage (from the module root):
//
//	go run ./bench/funclen [-top 15] [-fail-over N] [DIR]
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
	"sort"
	"strings"
)

type fn struct {
	name  string
	lines int
}

func main() {
	top := flag.Int("top", 15, "longest functions to list")
	failOver := flag.Int("fail-over", 0, "exit with status 1 when a function is longer than this many lines (0: never)")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	fns, err := collect(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(1)
	}
	report(fns, *top)
	if n := countOver(fns, *failOver); *failOver > 0 && n > 0 {
		fmt.Fprintf(os.Stderr, "funclen: %d functions are longer than %d lines\n", n, *failOver)
		os.Exit(1)
	}
}

// collect walks root and returns the functions with a body of its
// non-test, non-generated Go files, with their lengths.
func collect(root string) ([]fn, error) {
	var fns []fn
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found, err := fileFuncs(fset, path)
		fns = append(fns, found...)
		return err
	})
	return fns, err
}

// skipDir is filepath.SkipDir for a directory below root that is hidden,
// node_modules, testdata or another module's.
func skipDir(root, path, name string) error {
	if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
		return filepath.SkipDir
	}
	if path != root {
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
			return filepath.SkipDir // another module
		}
	}
	return nil
}

// fileFuncs parses the Go file at path and returns its functions with a
// body, named "path: [Recv.]Name" (none for a generated file).
func fileFuncs(fset *token.FileSet, path string) ([]fn, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var fns []fn
	for _, decl := range f.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
			fns = append(fns, funcOf(fset, path, fd))
		}
	}
	return fns, nil
}

// funcOf is the function fd of the file at path, named "path:
// [Recv.]Name", with its length in lines.
func funcOf(fset *token.FileSet, path string, fd *ast.FuncDecl) fn {
	n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
	name := fd.Name.Name
	if fd.Recv != nil && len(fd.Recv.List) > 0 {
		name = recv(fd.Recv.List[0].Type) + "." + name
	}
	return fn{filepath.ToSlash(path) + ": " + name, n}
}

// report prints the statistics of the functions' lengths and the top
// longest.
func report(fns []fn, top int) {
	sort.Slice(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	n := len(fns)
	if n == 0 {
		fmt.Println("no functions")
		return
	}
	asc := ascending(fns)
	fmt.Printf("functions %d; over 80 lines %d, over 100 lines %d; median %d, 90th percentile %d\n",
		n, countOver(fns, 80), countOver(fns, 100), asc[n/2], asc[(9*n)/10])
	for _, f := range fns[:min(top, n)] {
		fmt.Printf("%5d  %s\n", f.lines, f.name)
	}
}

// ascending is the functions' lengths in ascending order, from fns sorted
// longest first.
func ascending(fns []fn) []int {
	n := len(fns)
	asc := make([]int, n)
	for i, f := range fns {
		asc[n-1-i] = f.lines
	}
	return asc
}

// countOver is how many of the functions are longer than k lines.
func countOver(fns []fn, k int) int {
	c := 0
	for _, f := range fns {
		if f.lines > k {
			c++
		}
	}
	return c
}

func recv(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recv(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recv(t.X)
	}
	return "?"
}
