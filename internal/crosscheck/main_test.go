package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFindsPlatformErrors: a module whose Windows-only file declares a
// variable it never uses, and whose Unix-only file passes an int32 field
// where an int64 goes on darwin only, type-checks on linux and fails on
// windows and darwin, each naming its file; an importer of the broken
// package is not reported again.
func TestCheckFindsPlatformErrors(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":         "module example.com/m\n\ngo 1.24\n",
		"a/a.go":         "package a\n\nfunc A() int { return a() }\n",
		"a/a_windows.go": "package a\n\nfunc a() int { x := 1; return 2 }\n",
		"a/a_other.go": "//go:build !windows\n\npackage a\n\nimport (\n\t\"os\"\n\t\"syscall\"\n)\n\n" +
			"func a() int {\n\tst, _ := os.Stat(\".\")\n\tif s, ok := st.Sys().(*syscall.Stat_t); ok {\n\t\tvar b int64 = s.Blksize\n\t\treturn int(b)\n\t}\n\treturn 0\n}\n",
		"b/b.go": "package b\n\nimport \"example.com/m/a\"\n\nvar B = a.A()\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		goos, goarch, want string // want: "" if the module type-checks
	}{
		{"linux", "amd64", ""},
		{"windows", "amd64", "a_windows.go:3:16: declared and not used: x"},
		{"darwin", "arm64", "a_other.go:13:17: cannot use s.Blksize"},
	} {
		n, errs := check(dir, c.goos, c.goarch)
		if n != 2 {
			t.Errorf("%s/%s: %d packages of the module, want 2", c.goos, c.goarch, n)
		}
		if c.want == "" {
			for _, e := range errs {
				t.Errorf("%s/%s: %v", c.goos, c.goarch, e)
			}
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%s/%s: errors %v, want the one containing %q", c.goos, c.goarch, errs, c.want)
		}
	}
}
