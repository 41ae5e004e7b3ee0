package report

import (
	"math/rand/v2"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestHosts(t *testing.T) {
	got := Hosts(sampleData(t))
	want := []HostRow{
		{Host: "10.0.0.9:8080", Fetched: 1, Unique: 1},
		{Host: "10.0.0.10:8080", Fetched: 1, Exact: 1, Other: 1, DupRatio: 1},
		{Host: "evil.test", Fetched: 2, Near: 2, DupRatio: 1},
		{Host: "mirror.example.org", Fetched: 1, Near: 1, MirrorSkipped: 1, DupRatio: 1},
		{Host: "www.example.com", Fetched: 8, Unique: 3, Exact: 1, Near: 2, Other: 3, DupRatio: 0.5},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Hosts:\n got %+v\nwant %+v", got, want)
	}
	if n := got[4].Total(); n != 9 {
		t.Errorf("Total(www.example.com) = %d, want 9", n)
	}
}

func TestHostsDerivesHostFromURL(t *testing.T) {
	tests := []struct {
		name string
		page Page
		want string
	}{
		{"explicit host wins", Page{URL: "http://a.test/", Host: "b.test"}, "b.test"},
		{"host from url", Page{URL: "https://a.test:8443/x"}, "a.test:8443"},
		{"unparsable url", Page{URL: "http://[::1"}, "(unknown)"},
		{"relative url", Page{URL: "/just/a/path"}, "(unknown)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := Hosts(&Data{Pages: []Page{tt.page}})
			if len(rows) != 1 || rows[0].Host != tt.want {
				t.Fatalf("Hosts = %+v, want one row for %q", rows, tt.want)
			}
		})
	}
}

func TestHostsEmpty(t *testing.T) {
	if rows := Hosts(nil); rows != nil {
		t.Errorf("Hosts(nil) = %v, want nil", rows)
	}
	if rows := Hosts(&Data{}); len(rows) != 0 {
		t.Errorf("Hosts(empty) = %v, want none", rows)
	}
}

func TestNaturalCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"10.0.0.9", "10.0.0.10", -1},
		{"10.0.0.10", "10.0.0.9", 1},
		{"2.0.0.1", "10.0.0.1", -1},
		{"host:443", "host:8080", -1},
		{"a2", "a10", -1},
		{"a", "a", 0},
		{"a", "ab", -1},
		{"a1", "a1b", -1},
		{"a01", "a1", -1}, // numerically equal: byte order breaks the tie
		{"b", "a10", 1},
		{"", "a", -1},
		{"x99999999999999999999999", "x100000000000000000000000", -1}, // beyond int64
	}
	for _, tt := range tests {
		if got := naturalCompare(tt.a, tt.b); got != tt.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := naturalCompare(tt.b, tt.a); got != -tt.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d (antisymmetry)", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestClusters(t *testing.T) {
	got := Clusters(sampleData(t))
	type summary struct {
		rep     string
		members []string
	}
	want := []summary{
		{"http://www.example.com/a", []string{
			"http://www.example.com/a?session=1", // similarity 1
			"http://mirror.example.org/docs/a",   // 0.97
			"http://www.example.com/a-print",     // 0.93
		}},
		{"http://www.example.com/b", []string{
			"http://mirror.example.org/docs/b", // 0.95
			"http://www.example.com/b2",        // 0.81
			"http://evil.test/" + strings.Repeat("very-long-path-segment/", 12) + "end.html", // 0.76
		}},
		{"http://10.0.0.9:8080/", []string{"http://10.0.0.10:8080/"}},
		{"http://www.example.com/", []string{"javascript:alert(2)"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d clusters, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Representative != w.rep {
			t.Errorf("cluster %d: representative %q, want %q", i, got[i].Representative, w.rep)
		}
		var urls []string
		for _, m := range got[i].Members {
			urls = append(urls, m.URL)
			if m.DuplicateOf != got[i].Representative {
				t.Errorf("cluster %d: member %q has DuplicateOf %q", i, m.URL, m.DuplicateOf)
			}
		}
		if !slices.Equal(urls, w.members) {
			t.Errorf("cluster %d members:\n got %q\nwant %q", i, urls, w.members)
		}
	}
}

// TestClustersConnected: a cluster is a connected component of the
// DuplicateOf edges, as export's JSONL cluster: a mirror copy skipped for a
// near duplicate (and a copy of that copy) is in the cluster of the near
// duplicate's original, not in a cluster of its own; separate components
// stay separate, whatever the order of the pages.
func TestClustersConnected(t *testing.T) {
	pages := []Page{
		{URL: "http://a/", Class: ClassUnique},
		{URL: "http://b/", Class: ClassNearDuplicate, DuplicateOf: "http://a/", Similarity: 0.97},
		{URL: "http://m/b", Class: ClassMirrorSkipped, DuplicateOf: "http://b/"},
		{URL: "http://n/b", Class: ClassMirrorSkipped, DuplicateOf: "http://m/b"},
		{URL: "http://x/", Class: ClassUnique},
		{URL: "http://x1/", Class: ClassExactDuplicate, DuplicateOf: "http://x/", Similarity: 1},
		{URL: "http://q/", Class: ClassMirrorSkipped, DuplicateOf: "http://not-fetched/"},
	}
	want := []Cluster{
		{Representative: "http://a/", Members: []Page{pages[1], pages[2], pages[3]}},
		{Representative: "http://not-fetched/", Members: []Page{pages[6]}},
		{Representative: "http://x/", Members: []Page{pages[5]}},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		got := Clusters(&Data{Pages: pages})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("clusters\n got %+v\nwant %+v", got, want)
		}
		pages = slices.Clone(pages)
		r.Shuffle(len(pages), func(i, j int) { pages[i], pages[j] = pages[j], pages[i] })
	}
}

func TestClustersOrderIndependent(t *testing.T) {
	d := sampleData(t)
	want := Clusters(d)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		r.Shuffle(len(d.Pages), func(i, j int) { d.Pages[i], d.Pages[j] = d.Pages[j], d.Pages[i] })
		got := Clusters(d)
		for i := range want {
			if got[i].Representative != want[i].Representative || !slices.Equal(got[i].Members, want[i].Members) {
				t.Fatalf("cluster %d differs after shuffling pages", i)
			}
		}
	}
}

func TestCountClasses(t *testing.T) {
	tests := []struct {
		name  string
		pages []Page
		want  map[string]int
	}{
		{"empty has all seven", nil, map[string]int{
			ClassUnique: 0, ClassExactDuplicate: 0, ClassNearDuplicate: 0, ClassMirrorSkipped: 0,
			ClassRobotsDisallowed: 0, ClassNotHTML: 0, ClassError: 0}},
		{"counts and unknown classes", []Page{{Class: ClassUnique}, {Class: ClassUnique}, {Class: "weird"}},
			map[string]int{ClassUnique: 2, ClassExactDuplicate: 0, ClassNearDuplicate: 0, ClassMirrorSkipped: 0,
				ClassRobotsDisallowed: 0, ClassNotHTML: 0, ClassError: 0, "weird": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CountClasses(tt.pages)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
		})
	}
}

func TestRequestsSaved(t *testing.T) {
	if got := RequestsSaved(sampleData(t)); got != 53 {
		t.Errorf("RequestsSaved = %d, want 41+12", got)
	}
	if got := RequestsSaved(nil); got != 0 {
		t.Errorf("RequestsSaved(nil) = %d", got)
	}
}

// TestForbiddenImports keeps the package pure: no network client, no
// storage engine.
func TestForbiddenImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"net/http", "net", "os/exec", "github.com/dgraph-io/badger/v4", "github.com/gocolly/colly/v2"}
	for _, dep := range strings.Fields(string(out)) {
		if slices.Contains(forbidden, dep) {
			t.Errorf("report imports %s", dep)
		}
	}
}
