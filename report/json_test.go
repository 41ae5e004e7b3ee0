package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestWriteJSONRoundTrip(t *testing.T) {
	d := sampleData(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	var got Data
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := normalized(d)
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got, *want)
	}
	// Everything the engine supplied survives, in the documented order.
	if len(got.Pages) != len(d.Pages) {
		t.Fatalf("got %d pages, want %d", len(got.Pages), len(d.Pages))
	}
	if !slices.IsSortedFunc(got.Pages, func(a, b Page) int { return cmpString(a.URL, b.URL) }) {
		t.Error("pages not sorted by URL")
	}
	if !got.Stats.Finished.Equal(d.Stats.Finished) {
		t.Errorf("finished = %v, want %v", got.Stats.Finished, d.Stats.Finished)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decodeMap writes d as JSON and decodes it into generic values.
func decodeMap(t *testing.T, d *Data) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("decode: %v\n%s", err, buf.Bytes())
	}
	return m
}

func keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v (%T) is not a JSON object", v, v)
	}
	return slices.Sorted(maps.Keys(m))
}

// paramNamed returns the irrelevant_params entry of the decoded report m whose param is name.
func paramNamed(m map[string]any, name string) any {
	for _, p := range m["irrelevant_params"].([]any) {
		if p.(map[string]any)["param"] == name {
			return p
		}
	}
	return nil
}

func TestWriteJSONKeys(t *testing.T) {
	m := decodeMap(t, sampleData(t))
	tests := []struct {
		name string
		obj  any
		want []string
	}{
		{"top level", m, []string{"filter", "filter_curve", "host_notes", "irrelevant_params", "mirrors", "missing_subtrees", "pages", "replicated_prefixes", "stats"}},
		{"irrelevant param", paramNamed(m, "s"), []string{"host", "param", "pairs", "paths", "examples", "withdrawn", "counter"}},
		{"param pair", paramNamed(m, "s").(map[string]any)["counter"], []string{"url", "other"}},
		{"path segment", paramNamed(m, "/*/"), []string{"host", "param", "value", "pairs", "paths", "examples", "withdrawn"}},
		{"stats", m["stats"], []string{"by_class", "complete", "finished", "hosts", "pages", "requests", "started"}},
		{"by_class", m["stats"].(map[string]any)["by_class"], Classes()},
		{"mirror", m["mirrors"].([]any)[0], []string{"host", "mirror_of", "original_prefix", "paths_compared",
			"paths_matched", "prefix", "requests_saved", "score", "verified", "verify_matched", "gap_probes", "gap_hits", "samples", "links_compared", "links_matched",
			"lacks_mirror", "lacks_original", "direction_by_lacks", "swaps", "halted"}},
		{"replicated prefix", m["replicated_prefixes"].([]any)[0], []string{"host", "mirror_of", "original_prefix",
			"paths_compared", "paths_matched", "prefix", "requests_saved", "score", "verified", "verify_matched", "gap_probes", "gap_hits", "samples", "links_compared", "links_matched",
			"lacks_mirror", "lacks_original", "direction_by_lacks", "swaps", "halted"}},
		{"curve point", m["filter_curve"].([]any)[0], []string{"jaccard", "probability"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Sorted(slices.Values(tt.want))
			if got := keys(t, tt.obj); !slices.Equal(got, want) {
				t.Errorf("keys = %q, want %q", got, want)
			}
		})
	}

	// Page keys: the always-present ones on every page; the optional ones
	// exactly when set.
	always := []string{"class", "content_type", "depth", "fetched_at", "host", "status", "url"}
	for _, p := range m["pages"].([]any) {
		obj := p.(map[string]any)
		for _, k := range always {
			if _, ok := obj[k]; !ok {
				t.Errorf("page %v lacks %q", obj["url"], k)
			}
		}
		for k := range obj {
			if !slices.Contains(always, k) &&
				!slices.Contains([]string{"title", "duplicate_of", "similarity", "method", "error"}, k) {
				t.Errorf("page %v has undocumented key %q", obj["url"], k)
			}
		}
		_, hasDup := obj["duplicate_of"]
		_, hasMethod := obj["method"]
		if hasDup != hasMethod {
			t.Errorf("page %v: duplicate_of present %v but method present %v", obj["url"], hasDup, hasMethod)
		}
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &Data{}); err != nil {
		t.Fatal(err)
	}
	m := decodeMap(t, &Data{})
	for _, k := range []string{"pages", "mirrors", "replicated_prefixes", "filter_curve"} {
		arr, ok := m[k].([]any)
		if !ok || len(arr) != 0 {
			t.Errorf("%s = %#v, want []", k, m[k])
		}
	}
	stats := m["stats"].(map[string]any)
	if _, ok := stats["finished"]; ok {
		t.Error("finished present for a crawl that has not finished")
	}
	bc := stats["by_class"].(map[string]any)
	for _, c := range Classes() {
		if v, ok := bc[c]; !ok || v != 0.0 {
			t.Errorf("by_class[%s] = %v (present %v), want 0", c, v, ok)
		}
	}
	for _, null := range []string{`"mirrors": null`, `"replicated_prefixes": null`, `"pages": null`} {
		if bytes.Contains(buf.Bytes(), []byte(null)) {
			t.Errorf("output contains %s", null)
		}
	}
}

func TestWriteJSONByClass(t *testing.T) {
	tests := []struct {
		name string
		d    *Data
		want map[string]float64
	}{
		{
			name: "engine counts kept, missing classes zero",
			d:    &Data{Stats: Stats{ByClass: map[string]int{ClassUnique: 7, "custom": 2}}},
			want: map[string]float64{ClassUnique: 7, "custom": 2},
		},
		{
			name: "derived from pages when absent",
			d:    &Data{Pages: []Page{{URL: "a", Class: ClassError}, {URL: "b", Class: ClassError}}},
			want: map[string]float64{ClassError: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bc := decodeMap(t, tt.d)["stats"].(map[string]any)["by_class"].(map[string]any)
			for _, c := range Classes() {
				if bc[c] != tt.want[c] {
					t.Errorf("by_class[%s] = %v, want %v", c, bc[c], tt.want[c])
				}
			}
			for k, v := range tt.want {
				if bc[k] != v {
					t.Errorf("by_class[%s] = %v, want %v", k, bc[k], v)
				}
			}
		})
	}
}

func TestWriteJSONDeterministic(t *testing.T) {
	d := sampleData(t)
	var first bytes.Buffer
	if err := WriteJSON(&first, d); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		r.Shuffle(len(d.Pages), func(i, j int) { d.Pages[i], d.Pages[j] = d.Pages[j], d.Pages[i] })
		r.Shuffle(len(d.Curve), func(i, j int) { d.Curve[i], d.Curve[j] = d.Curve[j], d.Curve[i] })
		var again bytes.Buffer
		if err := WriteJSON(&again, d); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), again.Bytes()) {
			t.Fatal("output depends on the order of pages or curve points")
		}
	}
}

func TestWritersDoNotModifyData(t *testing.T) {
	writers := map[string]func(*bytes.Buffer, *Data) error{
		"json": func(b *bytes.Buffer, d *Data) error { return WriteJSON(b, d) },
		"text": func(b *bytes.Buffer, d *Data) error { return WriteText(b, d) },
		"html": func(b *bytes.Buffer, d *Data) error { return WriteHTML(b, d) },
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			d := &Data{Pages: sampleData(t).Pages[:4]}
			slices.Reverse(d.Pages)
			before := *d
			before.Pages = slices.Clone(d.Pages)
			var buf bytes.Buffer
			if err := write(&buf, d); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*d, before) {
				t.Errorf("%s writer modified its input", name)
			}
		})
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriterErrors(t *testing.T) {
	errDisk := errors.New("disk full")
	writers := map[string]func(w failWriter, d *Data) error{
		"json": func(w failWriter, d *Data) error { return WriteJSON(w, d) },
		"text": func(w failWriter, d *Data) error { return WriteText(w, d) },
		"html": func(w failWriter, d *Data) error { return WriteHTML(w, d) },
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			if err := write(failWriter{errDisk}, sampleData(t)); !errors.Is(err, errDisk) {
				t.Errorf("write error = %v, want it to wrap %v", err, errDisk)
			}
			if err := write(failWriter{errDisk}, nil); !errors.Is(err, ErrNilData) {
				t.Errorf("nil data error = %v, want ErrNilData", err)
			}
		})
	}
}

func TestWriteJSONRejectsNaN(t *testing.T) {
	d := &Data{Pages: []Page{{URL: "a", Similarity: math.NaN()}}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, d); err == nil {
		t.Fatal("NaN similarity encoded without error")
	}
}

func TestWriteJSONTimesRFC3339(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	d := &Data{Stats: Stats{Started: time.Date(2025, 1, 1, 10, 0, 0, 0, loc)}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"started": "2025-01-01T10:00:00+01:00"`)) {
		t.Errorf("started not RFC 3339 with offset:\n%s", buf.Bytes())
	}
}

// TestSchemaDocumentsEveryKey checks that SCHEMA.md has a table row for
// every key the writer emits.
func TestSchemaDocumentsEveryKey(t *testing.T) {
	schema, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	d := sampleData(t)
	d.Pages[0].Error = "x" // make every optional page key appear
	seen := make(map[string]bool)
	var walk func(v any, parent string)
	walk = func(v any, parent string) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if parent == "by_class" {
					continue // class names, documented in their own table
				}
				seen[k] = true
				walk(child, k)
			}
		case []any:
			for _, child := range v {
				walk(child, parent)
			}
		}
	}
	walk(decodeMap(t, d), "")
	if len(seen) < 30 {
		t.Fatalf("only %d keys seen", len(seen))
	}
	for k := range seen {
		if !bytes.Contains(schema, []byte("| `"+k+"` |")) {
			t.Errorf("SCHEMA.md has no row for key %q", k)
		}
	}
	for _, c := range Classes() {
		if !bytes.Contains(schema, []byte("| `"+c+"` |")) {
			t.Errorf("SCHEMA.md does not describe class %q", c)
		}
	}
}
