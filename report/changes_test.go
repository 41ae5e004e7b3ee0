package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func changesData() *Data {
	t0 := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	return &Data{
		Pages: []Page{
			{URL: "http://a.test/same", Host: "a.test", Status: 200, Class: ClassUnique, Change: ChangeNone, ChangeSimilarity: 1},
			{URL: "http://a.test/dated", Host: "a.test", Status: 200, Class: ClassUnique, Change: ChangeTrivial, ChangeSimilarity: 0.962},
			{URL: "http://a.test/edited?<b>", Host: "a.test", Status: 200, Class: ClassUnique, Change: ChangeReal, ChangeSimilarity: 0.41},
			{URL: "http://a.test/removed", Host: "a.test", Status: 404, Class: ClassUnique, Change: ChangeGone},
			{URL: "http://a.test/fresh", Host: "a.test", Status: 200, Class: ClassUnique, Change: ChangeNew},
			{URL: "http://a.test/renamed", Host: "a.test", Status: 200, Class: ClassUnique, Change: ChangeMoved, MovedTo: "http://a.test/new-name"},
			{URL: "http://a.test/old", Host: "a.test", Status: 200, Class: ClassUnique},
		},
		Changes: &Changes{Round: 1, Started: t0, Conditional: 4, NotModified: 1,
			ByChange: map[string]int{ChangeNone: 1, ChangeTrivial: 1, ChangeReal: 1, ChangeNew: 1, ChangeMoved: 1, ChangeGone: 1, ChangeFailed: 0}},
	}
}

// TestChangesSection: the recrawl's changes in the three formats, and no
// section without a recrawl.
func TestChangesSection(t *testing.T) {
	t.Parallel()
	d := changesData()
	var txt bytes.Buffer
	if err := WriteText(&txt, d); err != nil {
		t.Fatal(err)
	}
	s := txt.String()
	flat := strings.Join(strings.Fields(s), " ")
	for _, want := range []string{
		"CHANGES (recrawl 1, started 2026-11-25",
		"unchanged 1, trivially_changed 1, changed 1, new 1, moved 1, gone 1, failed 0",
		"4 conditional requests, 1 answered 304 Not Modified",
		"changed           0.410  http://a.test/edited?<b>",
		"trivially_changed 0.962  http://a.test/dated",
		"new  http://a.test/fresh", "moved  http://a.test/renamed -> http://a.test/new-name", "gone  http://a.test/removed",
	} {
		if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("text report lacks %q:\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, "/edited"), strings.Index(s, "/dated"); i < 0 || j < 0 || i > j {
		t.Errorf("real changes are not listed first")
	}
	if strings.Contains(s[strings.Index(s, "CHANGES"):], "/same") || strings.Contains(s[strings.Index(s, "CHANGES"):], "/old") {
		t.Errorf("unchanged pages listed under CHANGES")
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Changes *Changes `json:"changes"`
		Pages   []Page   `json:"pages"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Changes == nil || got.Changes.ByChange[ChangeGone] != 1 || got.Changes.NotModified != 1 || got.Changes.Conditional != 4 {
		t.Errorf("JSON changes = %+v", got.Changes)
	}
	changeOf := map[string]string{}
	for _, p := range got.Pages {
		changeOf[p.URL] = p.Change + " " + p.MovedTo
	}
	if changeOf["http://a.test/dated"] != ChangeTrivial+" " || changeOf["http://a.test/old"] != " " ||
		changeOf["http://a.test/renamed"] != ChangeMoved+" http://a.test/new-name" {
		t.Errorf("JSON page changes %v", changeOf)
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, d); err != nil {
		t.Fatal(err)
	}
	hs := h.String()
	if !strings.Contains(hs, `<section id="changes">`) || !strings.Contains(hs, "http://a.test/edited?&lt;b&gt;") ||
		!strings.Contains(hs, "Pages that changed, are new, moved or gone (5)") ||
		!strings.Contains(hs, `&rarr; <a href="http://a.test/new-name"`) {
		t.Errorf("HTML changes section missing or unescaped")
	}

	d.Changes = nil
	txt.Reset()
	h.Reset()
	js.Reset()
	WriteText(&txt, d)
	WriteHTML(&h, d)
	WriteJSON(&js, d)
	if strings.Contains(txt.String(), "CHANGES") || strings.Contains(h.String(), `id="changes"`) || strings.Contains(js.String(), `"changes"`) {
		t.Error("a changes section without a recrawl")
	}
}
