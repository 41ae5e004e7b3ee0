//go:build e2e

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// jsonlRecord is what the cluster checks read of a JSONL record.
type jsonlRecord struct {
	URL            string `json:"url"`
	FinalURL       string `json:"final_url"`
	Class          string `json:"class"`
	Cluster        string `json:"cluster"`
	Representative bool   `json:"representative"`
	DuplicateOf    string `json:"duplicate_of"`
	Duplicates     []struct {
		URL string `json:"url"`
	} `json:"duplicates"`
}

// exportJSONL runs `crawler export --format jsonl` (with --all when all is
// set) on a crawl's data dir and returns the records.
func exportJSONL(t *testing.T, data string, all bool) []jsonlRecord {
	t.Helper()
	args := []string{"--data", data, "--format", "jsonl"}
	if all {
		args = append(args, "--all")
	}
	b, _ := runOut(t, "export", args...)
	return decodeJSONL[jsonlRecord](t, b)
}

// checkJSONLClusters checks the JSONL clusters of a finished crawl against
// the connected components of its duplicate_of edges, computed here from the
// records alone (an edge joins a record and the record whose URL or final
// URL its duplicate_of names, or that URL when no record has it): every
// component carries one cluster value, and no two share one; each is
// connected by duplicate_of edges; keeping one record per cluster keeps one
// per component; the components with a unique page have exactly one
// representative, the unique page, which lists every other member; and the
// export without --all writes exactly the representatives. It returns the
// number of components and of chain records (whose duplicate_of names a
// record that is itself a duplicate or a skip).
func checkJSONLClusters(t *testing.T, data string) (components, chains int) {
	t.Helper()
	recs := exportJSONL(t, data, true)
	// Nodes: records, then URLs named without a record.
	node := map[string]int{}
	for i, r := range recs {
		if _, ok := node[r.URL]; !ok {
			node[r.URL] = i
		}
	}
	for i, r := range recs {
		if _, ok := node[r.FinalURL]; !ok && r.FinalURL != "" {
			node[r.FinalURL] = i
		}
	}
	n := len(recs)
	adj := make([][]int, n)
	for i, r := range recs {
		if r.DuplicateOf == "" {
			continue
		}
		j, ok := node[r.DuplicateOf]
		if !ok {
			j = n
			node[r.DuplicateOf] = j
			adj = append(adj, nil)
			n++
		}
		if j < len(recs) && recs[j].Class != "unique" {
			chains++
		}
		adj[i] = append(adj[i], j)
		adj[j] = append(adj[j], i)
	}
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	for s := range n {
		if comp[s] >= 0 {
			continue
		}
		comp[s] = components
		stack := []int{s}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range adj[v] {
				if comp[w] < 0 {
					comp[w] = components
					stack = append(stack, w)
				}
			}
		}
		components++
	}
	valueOf := map[int]string{} // component -> cluster value
	compOf := map[string]int{}  // cluster value -> component
	members := map[int][]string{}
	reps := map[int][]int{}
	withUnique := map[int]bool{}
	for i, r := range recs {
		c := comp[i]
		if v, ok := valueOf[c]; ok && v != r.Cluster {
			t.Errorf("%s: cluster %q, another record of its component has %q", r.URL, r.Cluster, v)
		}
		valueOf[c] = r.Cluster
		if k, ok := compOf[r.Cluster]; ok && k != c {
			t.Errorf("%s: cluster %q is also the value of a component not connected to it by duplicate_of edges", r.URL, r.Cluster)
		}
		compOf[r.Cluster] = c
		members[c] = append(members[c], r.URL)
		if r.Representative {
			reps[c] = append(reps[c], i)
		}
		if r.Class == "unique" {
			withUnique[c] = true
		}
	}
	// Components of records (a URL named without a record adds no record).
	withRecords := len(valueOf)
	if len(compOf) != withRecords {
		t.Errorf("keeping one record per cluster keeps %d, there are %d components", len(compOf), withRecords)
	}
	for c := range valueOf {
		switch {
		case withUnique[c] && len(reps[c]) != 1:
			t.Errorf("component %v: %d representatives, want 1", members[c], len(reps[c]))
		case !withUnique[c] && len(reps[c]) != 0:
			t.Errorf("component %v without a unique page has a representative", members[c])
		}
		for _, i := range reps[c] {
			r := recs[i]
			if r.Class != "unique" {
				t.Errorf("%s: representative of class %s", r.URL, r.Class)
			}
			var listed []string
			for _, d := range r.Duplicates {
				listed = append(listed, d.URL)
			}
			others := slices.DeleteFunc(slices.Clone(members[c]), func(u string) bool { return u == r.URL })
			slices.Sort(listed)
			slices.Sort(others)
			if !slices.Equal(listed, others) {
				t.Errorf("%s: lists %d duplicates, its component has %d other records", r.URL, len(listed), len(others))
			}
		}
	}
	kept := exportJSONL(t, data, false)
	if len(kept) != len(reps) {
		t.Errorf("the export without --all writes %d records, there are %d clusters with a unique page", len(kept), len(reps))
	}
	for _, r := range kept {
		if !r.Representative || r.Class != "unique" {
			t.Errorf("%s: class %s, representative %v in the export without --all", r.URL, r.Class, r.Representative)
		}
	}
	return withRecords, chains
}

// TestDemoJSONLClusters checks the JSONL clusters of a crawl of the demo web.
func TestDemoJSONLClusters(t *testing.T) {
	t.Setenv("HORSESHOE_SHARED", filepath.Join(t.TempDir(), "no-shared-here"))
	data := filepath.Join(t.TempDir(), "data")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"demo", "--web", filepath.Join("..", "..", "testdata", "demo"), "--data", data}, &out, &errOut); err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	comps, chains := checkJSONLClusters(t, data)
	t.Logf("demo: %d clusters, %d records naming a duplicate or a skip as their original", comps, chains)
}

// TestCorpusJSONLClusters checks the JSONL clusters of the crawl of the real
// corpus, whose mirrors skip copies of near duplicates (chains).
func TestCorpusJSONLClusters(t *testing.T) {
	c := crawlCorpus(t)
	comps, chains := checkJSONLClusters(t, c.data)
	t.Logf("corpus: %d clusters, %d records naming a duplicate or a skip as their original", comps, chains)
	if chains == 0 {
		t.Error("no record of the corpus crawl names a duplicate or a skip as its original: the test no longer covers chains")
	}
}
