package mirror

import "testing"

// Link evidence from one duplicate pair: a mirror's page links where its
// original does (under the prefix mapping the pair implies); a page copied
// into an unrelated site does not, and proposes no candidate.
func TestLinkEvidence(t *testing.T) {
	orig := "http://a/docs/15/tutorial.html"
	origLinks := []string{"http://a/docs/15/sql.html", "http://a/docs/15/intro.html", "http://a/docs/15/start.html",
		"http://a/docs/15/sql.html", "http://other/x", "http://a/docs/15/index.html"}
	hashes := LinkHashes(orig, origLinks)
	if len(hashes) != 4 {
		t.Fatalf("%d link hashes, want the 4 distinct links on the page's origin", len(hashes))
	}
	copyURL := "http://b/pgsql/15.18/tutorial.html"
	copyLinks := []string{"http://b/pgsql/15.18/sql.html", "http://b/pgsql/15.18/intro.html",
		"http://b/pgsql/15.18/start.html", "http://b/", "http://elsewhere/y"}
	c, m := LinkEvidence(copyURL, orig, copyLinks, hashes)
	if c != 4 || m != 3 {
		t.Fatalf("mirror page: %d of %d links matched, want 3 of 4 (the off-prefix link counts, the off-site one not)", m, c)
	}
	d := NewDetector(DefaultOptions())
	key := d.ProposeLinks(copyURL, orig, c, m)
	if key == "" {
		t.Fatal("a pair whose links map proposed no candidate")
	}
	cand, _ := d.Candidate(key)
	if cand.LinksCompared != 4 || cand.LinksMatched != 3 || cand.Pairs != 1 {
		t.Fatalf("candidate evidence %+v", cand)
	}

	// A license page copied into another site: same text, its own links.
	lic := "http://a/docs/15/legal.html"
	licHashes := LinkHashes(lic, []string{"http://a/docs/15/index.html", "http://a/docs/15/bookindex.html"})
	other := "http://c/site/legal.html"
	otherLinks := []string{"http://c/site/home.html", "http://c/site/blog/", "http://c/about.html"}
	c, m = LinkEvidence(other, lic, otherLinks, licHashes)
	if c != 3 || m != 0 {
		t.Fatalf("unrelated copy: %d of %d links matched, want 0 of 3", m, c)
	}
	if k := d.ProposeLinks(other, lic, c, m); k != "" {
		t.Fatalf("unrelated copy proposed candidate %q", k)
	}
	if d.LinkRejected() != 1 || len(d.Candidates()) != 1 {
		t.Fatalf("rejected %d, candidates %d", d.LinkRejected(), len(d.Candidates()))
	}
	// A disagreeing pair adds its evidence to an existing candidate without
	// counting as one of its pairs; too few links count as no evidence.
	if k := d.ProposeLinks("http://b/pgsql/15.18/x.html", "http://a/docs/15/x.html", 5, 1); k != "" {
		t.Fatal("disagreeing pair counted")
	}
	if k := d.ProposeLinks("http://b/pgsql/15.18/y.html", "http://a/docs/15/y.html", 2, 0); k != key {
		t.Fatal("a pair with 2 links (below MinLinks) was not counted")
	}
	cand, _ = d.Candidate(key)
	if cand.Pairs != 2 || cand.LinkDisagreements != 1 || cand.LinksCompared != 11 || cand.LinksMatched != 4 {
		t.Fatalf("candidate after more pairs: %+v", cand)
	}
}

// Two prefixes of one host share their site navigation: a link outside the
// mapped prefix that the original has too counts as matched.
func TestLinkEvidenceSharedNavigation(t *testing.T) {
	orig := "http://h/v1/a.html"
	hashes := LinkHashes(orig, []string{"http://h/v1/b.html", "http://h/about.html", "http://h/blog/"})
	c, m := LinkEvidence("http://h/v2/a.html", orig,
		[]string{"http://h/v2/b.html", "http://h/about.html", "http://h/blog/", "http://h/v2/new.html"}, hashes)
	if c != 4 || m != 3 {
		t.Fatalf("%d of %d matched, want 3 of 4 (b.html mapped, the two shared navigation links as they are)", m, c)
	}
}
