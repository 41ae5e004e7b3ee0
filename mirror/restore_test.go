package mirror

import "testing"

// TestRestoreKeepsRepresents: a candidate saved (Candidate) and restored
// into a new detector (a resumed crawl) judges skips as before: the pair's
// typical difference comes back with it, so a short copy that the first
// detector would fetch is not skipped after a resume.
func TestRestoreKeepsRepresents(t *testing.T) {
	d := NewDetector(Options{})
	c := Candidate{Key: "k", AOrigin: "http://a", BOrigin: "http://b"}
	if err := d.Restore([]Candidate{c}); err != nil {
		t.Fatal(err)
	}
	// Three compared pairs that each differ in 40 shingles.
	for p := range 3 {
		a := make([]uint64, 0, 240)
		b := make([]uint64, 0, 240)
		for i := range 200 {
			a = append(a, uint64(i))
			b = append(b, uint64(i))
		}
		for i := range 20 {
			a = append(a, uint64(1000*(p+1)+i))
			b = append(b, uint64(5000*(p+1)+i))
		}
		d.Resemblance("k", a, b)
	}
	for _, words := range []int{100, 150, 199, 200, 201, 400} {
		before := d.Represents("k", words)
		saved, ok := d.Candidate("k")
		if !ok {
			t.Fatal("candidate lost")
		}
		r := NewDetector(Options{})
		if err := r.Restore([]Candidate{saved}); err != nil {
			t.Fatal(err)
		}
		if after := r.Represents("k", words); after != before {
			t.Errorf("%d words: Represents %v before the resume, %v after", words, before, after)
		}
	}
	if d.Represents("k", 100) {
		t.Errorf("a 100-word page with a typical difference of 40 shingles represents its copy")
	}
}
