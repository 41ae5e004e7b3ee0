package horseshoe_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureTable: the package table of docs/ARCHITECTURE.md names
// every package, and its "imports (project)" column is what `go list` says
// each imports of the project, so the table cannot drift from the code.
func TestArchitectureTable(t *testing.T) {
	const root = "github.com/horseshoe-crawler/horseshoe"
	b, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const head = "| package | owns | imports (project) |"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("docs/ARCHITECTURE.md has no table headed %q", head)
	}
	table := doc[i:]
	if j := strings.Index(table, "\n\n"); j >= 0 {
		table = table[:j]
	}
	rows := map[string]string{} // package (relative to the module, "" for its root) -> imports column
	for _, row := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(strings.Trim(row, "|"), "|")
		if len(cells) != 3 {
			t.Errorf("row %q: want 3 cells", row)
			continue
		}
		name := strings.TrimSuffix(strings.Trim(strings.TrimSpace(cells[0]), "`"), "/")
		if name == "(module root)" {
			name = ""
		}
		rows[name] = strings.TrimSpace(cells[2])
	}
	for p, info := range packages(t) {
		name := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		var imps []string
		for _, imp := range info.imports {
			if rel, ok := strings.CutPrefix(imp, mod); ok {
				imps = append(imps, rel)
			}
		}
		slices.Sort(imps)
		want := "none"
		if len(imps) > 0 {
			want = strings.Join(imps, ", ")
		}
		got, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("docs/ARCHITECTURE.md does not list package %q (it imports %s)", p, want)
		case got != want:
			t.Errorf("docs/ARCHITECTURE.md says %q imports %s; it imports %s", p, got, want)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/ARCHITECTURE.md lists %q, which is not a package", name)
	}
}
