package dedup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// versionPage is a generated page: a header, paragraphs of prose and a footer,
// whose parts the variants below edit.
type versionPage struct {
	header, footer string
	paras          []string
}

func (p versionPage) text() string {
	return p.header + "\n" + strings.Join(p.paras, "\n") + "\n" + p.footer
}

func (p versionPage) clone() versionPage {
	p.paras = append([]string(nil), p.paras...)
	return p
}

// genPage makes a page of about words words of prose in paragraphs of 60,
// drawn from a 3,000-word vocabulary (Zipf-like: common words repeat).
func genPage(r *rand.Rand, words int) versionPage {
	p := versionPage{
		header: "Example Gazette home news sport weather contact",
		footer: "Last updated 25 November 2026 · © 2026 Example Gazette Ltd. All rights reserved. Visitors: 12,345",
	}
	for n := 0; n < words; n += 60 {
		p.paras = append(p.paras, genProse(r, min(60, words-n)))
	}
	return p
}

func genProse(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d", int(3000*r.Float64()*r.Float64()))
	}
	return strings.Join(ws, " ")
}

// simpleTokens lower-cases and splits on spaces: enough for dedup's tests
// (parse.Tokenize is the crawl's tokenizer; the crawl tests use it).
func simpleTokens(s string) []string { return strings.Fields(strings.ToLower(s)) }

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	det, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(20, 2))
	long := genPage(r, 600)
	short := genPage(r, 60)
	huge := genPage(r, 2000)
	footer := func(base versionPage, f string) versionPage { v := base.clone(); v.footer = f; return v }
	edit := func(base versionPage, fn func(v *versionPage)) versionPage { v := base.clone(); fn(&v); return v }
	type tc struct {
		name      string
		prev, cur versionPage
		want      Change
	}
	cases := []tc{
		{"identical", long, long.clone(), ChangeNone},
		{"whitespace only", long, edit(long, func(v *versionPage) { v.paras[2] = "  " + strings.ReplaceAll(v.paras[2], " ", "   ") }), ChangeNone},
		{"case only", long, edit(long, func(v *versionPage) { v.header = strings.ToUpper(v.header) }), ChangeNone},
		// A new date, in the formats sites print.
		{"date: day month year", long, footer(long, strings.Replace(long.footer, "25 November 2026", "26 November 2026", 1)), ChangeTrivial},
		{"date: ISO 8601", long, footer(long, "Last updated 2026-11-26 · © 2026 Example Gazette Ltd. All rights reserved. Visitors: 12,345"), ChangeTrivial},
		{"date: US numeric", long, footer(long, "Last updated 11/26/2026 · © 2026 Example Gazette Ltd. All rights reserved. Visitors: 12,345"), ChangeTrivial},
		{"date: RFC 1123 with time", long, footer(long, "Last updated Thu, 26 Nov 2026 10:42:07 GMT · © 2026 Example Gazette Ltd. All rights reserved. Visitors: 12,345"), ChangeTrivial},
		{"date: in the header", long, edit(long, func(v *versionPage) { v.header += " Wednesday 26 November 2026" }), ChangeTrivial},
		{"footer: new copyright year and a link", long, footer(long, "Last updated 25 November 2026 · © 2027 Example Gazette Ltd. All rights reserved. Privacy policy. Visitors: 12,345"), ChangeTrivial},
		{"counter", long, footer(long, strings.Replace(long.footer, "12,345", "12,401", 1)), ChangeTrivial},
		{"counter and date", huge, footer(huge, "Last updated 26 November 2026 · © 2026 Example Gazette Ltd. All rights reserved. Visitors: 99,001"), ChangeTrivial},
		// Real edits.
		{"two paragraphs rewritten", long, edit(long, func(v *versionPage) { v.paras[4], v.paras[7] = genProse(r, 60), genProse(r, 60) }), ChangeReal},
		{"two paragraphs added", long, edit(long, func(v *versionPage) {
			v.paras = append(v.paras[:3], append([]string{genProse(r, 60), genProse(r, 60)}, v.paras[3:]...)...)
		}), ChangeReal},
		{"two paragraphs deleted", long, edit(long, func(v *versionPage) { v.paras = append(v.paras[:5], v.paras[7:]...) }), ChangeReal},
		{"half rewritten", long, edit(long, func(v *versionPage) {
			for i := 0; i < len(v.paras); i += 2 {
				v.paras[i] = genProse(r, 60)
			}
		}), ChangeReal},
		{"another page", long, genPage(r, 600), ChangeReal},
		{"emptied", long, versionPage{}, ChangeReal},
		// The edit a page absorbs shrinks with the page: a 60-word page
		// with a new date is not a near duplicate of its previous version.
		{"short page, new date", short, footer(short, strings.Replace(short.footer, "25 November", "26 November", 1)), ChangeReal},
		{"short page, identical", short, short.clone(), ChangeNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pt, ct := simpleTokens(c.prev.text()), simpleTokens(c.cur.text())
			ps, cs := det.Sign(pt), det.Sign(ct)
			got := det.CompareVersions(ps, cs, pt, ct)
			if got.Change != c.want {
				j := ExactJaccard(det.Shingles(pt, nil), det.Shingles(ct, nil))
				t.Fatalf("%s (exact J %.4f, sketch %d/84), want %s", got.Change, j, equalSamples(ps.Sketch, cs.Sketch), c.want)
			}
			if th := det.Options().Threshold; got.Change == ChangeTrivial && (!got.Settled || got.Similarity < th) {
				t.Errorf("trivial change not settled at >= %g: %+v", th, got)
			}
			// The crawl's own duplicate decision agrees: index the previous
			// version, check the new one with exact settlement.
			d, _ := New(DefaultOptions())
			d.Add(1, ps)
			dec := d.CheckAndAddSettled(2, cs, func(uint64) (float64, bool) {
				return ExactJaccard(d.Shingles(pt, nil), d.Shingles(ct, nil)), true
			})
			wantDup := map[Change]Class{ChangeNone: Exact, ChangeTrivial: Near, ChangeReal: Unique}[c.want]
			if dec.Class != wantDup {
				t.Errorf("duplicate decision on the pair: %s, want %s", dec.Class, wantDup)
			}
		})
	}
}

// TestCompareVersionsSketchOnly: without the previous text, the sketch
// estimate decides (as for an unreadable duplicate candidate).
func TestCompareVersionsSketchOnly(t *testing.T) {
	t.Parallel()
	det, _ := New(DefaultOptions())
	r := rand.New(rand.NewPCG(7, 7))
	p := genPage(r, 2000)
	v := p.clone()
	v.footer = strings.Replace(v.footer, "12,345", "12,346", 1)
	got := det.CompareVersions(det.Sign(simpleTokens(p.text())), det.Sign(simpleTokens(v.text())), nil, simpleTokens(v.text()))
	if got.Change != ChangeTrivial || got.Settled || got.Similarity < det.Options().Threshold {
		t.Errorf("counter on 2,000 words, sketch only: %+v, want trivially_changed on the estimate", got)
	}
	v.paras = v.paras[:len(v.paras)/2]
	got = det.CompareVersions(det.Sign(simpleTokens(p.text())), det.Sign(simpleTokens(v.text())), nil, nil)
	if got.Change != ChangeReal || got.Settled {
		t.Errorf("half deleted, sketch only: %+v, want changed", got)
	}
}

func TestChangeStrings(t *testing.T) {
	t.Parallel()
	for _, c := range Changes {
		got, ok := ParseChange(c.String())
		if !ok || got != c {
			t.Errorf("ParseChange(%q) = %v, %v", c.String(), got, ok)
		}
	}
	if _, ok := ParseChange("unique"); ok {
		t.Error("ParseChange accepted a duplicate class")
	}
}

// BenchmarkCompareVersions: a 600-word page against its version with a new
// footer date (settled: two shinglings and an exact Jaccard).
func BenchmarkCompareVersions(b *testing.B) {
	det, _ := New(DefaultOptions())
	r := rand.New(rand.NewPCG(1, 1))
	p := genPage(r, 600)
	v := p.clone()
	v.footer = strings.Replace(v.footer, "25 November", "26 November", 1)
	pt, vt := simpleTokens(p.text()), simpleTokens(v.text())
	ps, vs := det.Sign(pt), det.Sign(vt)
	b.ReportAllocs()
	for b.Loop() {
		if det.CompareVersions(ps, vs, pt, vt).Change != ChangeTrivial {
			b.Fatal("not trivial")
		}
	}
}
