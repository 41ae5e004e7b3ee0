// Command crosscheck type-checks the module's packages (not their tests) as
// they build for other platforms, from source: every .go file the platform's
// build constraints select, the standard library and the dependencies
// included, with cgo off. It is `make cross`'s check that code with build
// constraints (storage's locks and inodes, dedup's and parse's assembly
// fallbacks, scaleweb's signals) compiles elsewhere, at a fraction of the
// cost of `GOOS=... go build ./...`, which compiles and links every
// dependency for each platform from a cold cache.
//
//	go run ./internal/crosscheck windows/amd64 darwin/arm64
//
// Type-checking finds what fails a build (undefined names, wrong types,
// unused imports and variables, missing methods) but not a link error or a
// wrong assembly file; the platforms' real builds are `make cross-build`.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck GOOS/GOARCH ...")
		os.Exit(2)
	}
	failed := false
	for _, p := range os.Args[1:] {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "crosscheck: %q is not GOOS/GOARCH\n", p)
			os.Exit(2)
		}
		n, errs := check(".", goos, goarch)
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p, e)
		}
		if len(errs) > 0 {
			failed = true
			continue
		}
		fmt.Printf("%s: %d packages type-check\n", p, n)
	}
	if failed {
		os.Exit(1)
	}
}

// listed is what `go list -deps -json` says of one package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Standard   bool
	ImportMap  map[string]string
	DepOnly    bool
	Error      *struct{ Err string }
}

// check type-checks every package of the module in dir for goos/goarch,
// with the whole dependency graph `go list -deps` gives for that platform,
// in dependency order (the dependencies' declarations only, not their
// function bodies). It returns the number of the module's packages and
// every error, those of packages that import a broken one left out.
func check(dir, goos, goarch string) (int, []error) {
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Dir,GoFiles,Standard,ImportMap,DepOnly,Error", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, []error{fmt.Errorf("go list: %v\n%s", err, stderr.String())}
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return 0, []error{fmt.Errorf("go list output: %v", err)}
		}
		pkgs = append(pkgs, p)
	}
	fset := token.NewFileSet()
	done := map[string]*types.Package{"unsafe": types.Unsafe}
	broken := map[string]bool{} // packages with errors: their importers' errors are not reported
	var errs []error
	n := 0
	for _, p := range pkgs { // -deps lists each package after its dependencies
		if p.ImportPath == "unsafe" {
			continue
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
			broken[p.ImportPath] = true
			continue
		}
		afterBroken := false
		var files []*ast.File
		for _, f := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			files = append(files, af)
		}
		var perr []error
		conf := types.Config{
			Importer: importerFunc(func(path string) (*types.Package, error) {
				if m, ok := p.ImportMap[path]; ok {
					path = m
				}
				if broken[path] {
					afterBroken = true
				}
				if tp, ok := done[path]; ok {
					return tp, nil
				}
				return nil, fmt.Errorf("%s: not checked before its importer", path)
			}),
			Sizes:            types.SizesFor("gc", goarch),
			IgnoreFuncBodies: p.DepOnly,
			FakeImportC:      true,
			Error:            func(err error) { perr = append(perr, err) },
		}
		tp, _ := conf.Check(p.ImportPath, fset, files, nil)
		done[p.ImportPath] = tp
		if !p.DepOnly {
			n++
		}
		if len(perr) > 0 {
			broken[p.ImportPath] = true
			if !afterBroken {
				errs = append(errs, perr...)
			}
		}
	}
	return n, errs
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
