package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// fill sets every field of the struct v points to, recursively through
// pointers and slices, to a random non-zero value: a field the record's
// encoding forgets then reads back zero, and the round trip fails. A field of
// a kind it does not know fails the test, to be taught here.
func fill(tb testing.TB, r *rand.Rand, v reflect.Value, path string) {
	tb.Helper()
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			zones := []*time.Location{time.UTC, time.FixedZone("", 3600*int(1+r.IntN(12))), time.FixedZone("", -1800)}
			t := time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
			v.Set(reflect.ValueOf(t))
			return
		}
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			fill(tb, r, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(tb, r, v.Elem(), path)
	case reflect.Slice:
		n := 1 + r.IntN(3)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(tb, r, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%x\xff\x00é", path, r.Uint64()))
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<39 | 1)
	case reflect.Uint64, reflect.Uint8:
		v.SetUint(r.Uint64()%(1<<(8*v.Type().Size()-1)) | 1)
	case reflect.Float64:
		v.SetFloat(r.Float64() + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	default:
		tb.Fatalf("%s: a field of kind %s: teach fill (and the record) about it", path, v.Kind())
	}
}

// samePage compares two pages field by field, times by their instant and
// offset (the zone's name is not kept, as JSON does not keep it).
func samePage(a, b *Page) bool {
	norm := func(p *Page) Page {
		q := *p
		q.FetchedAt = normTime(q.FetchedAt)
		if p.Revisit != nil {
			rv := *p.Revisit
			rv.FetchedAt, rv.PrevFetchedAt = normTime(rv.FetchedAt), normTime(rv.PrevFetchedAt)
			q.Revisit = &rv
		}
		return q
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	_, off := t.Zone()
	return t.In(time.FixedZone("", off))
}

// TestPageRecordRoundTrip: every field of Page and of its Revisit, set by
// reflection, reads back as written, a page without Revisit too, and the
// binary record is smaller than the JSON one.
func TestPageRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(testtools.Seed(t, "./storage/"), 29))
	for i := range 50 {
		var p Page
		fill(t, r, reflect.ValueOf(&p).Elem(), "Page")
		if i%2 == 1 {
			p.Revisit, p.Redirects = nil, nil
			p.Class = Classes[r.IntN(len(Classes))]
		}
		b := encodePage(&p)
		if b[0] != recordV1 {
			t.Fatalf("record begins %#x, want the version byte %#x", b[0], recordV1)
		}
		var got Page
		if err := decodePage(b, &got); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !samePage(&p, &got) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
		}
		j, _ := json.Marshal(&p)
		if len(b) >= len(j) {
			t.Errorf("binary record of %d bytes, JSON %d", len(b), len(j))
		}
	}
	var zero Page
	var got Page
	if err := decodePage(encodePage(&zero), &got); err != nil || !reflect.DeepEqual(got, zero) {
		t.Errorf("zero page: %+v, %v", got, err)
	}
}

// TestOldJSONRecords: the JSON page and skip records of a store written
// before the binary record (written here with Badger directly, as json.Marshal
// wrote them) read back as json.Unmarshal read them, through every reader.
func TestOldJSONRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(testtools.Seed(t, "./storage/"), 291))
	var old Page
	fill(t, r, reflect.ValueOf(&old).Elem(), "Page")
	old.ID, old.Class = 7, ClassUnique
	skipped := old
	skipped.ID, skipped.URL, skipped.Class, skipped.Revisit = 0, "http://a/skipped", ClassMirrorSkipped, nil
	jp, _ := json.Marshal(&old)
	js, _ := json.Marshal(&skipped)
	// What these records read as before: json.Unmarshal's page (JSON
	// does not keep invalid UTF-8, which fill puts in every string).
	old, skipped = Page{}, Page{}
	if err := json.Unmarshal(jp, &old); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &skipped); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := open(t, dir)
	defer db.Close()
	err := db.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(idKey('p', 7), jp); err != nil {
			return err
		}
		return txn.Set([]byte("k/"+skipped.URL), js)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A new record beside them.
	fresh := Page{ID: 8, URL: "http://a/new", Class: ClassNear, FetchedAt: time.Unix(9, 0).UTC()}
	if err := db.Update(func(tx *Tx) error { return tx.PutPage(&fresh) }); err != nil {
		t.Fatal(err)
	}
	want := func(what string, got *Page, err error, w *Page) {
		t.Helper()
		if err != nil || got == nil || !samePage(got, w) {
			t.Errorf("%s: %+v, %v; want %+v", what, got, err, w)
		}
	}
	p, err := db.Page(7)
	want("DB.Page of a JSON record", p, err, &old)
	p, err = db.Page(8)
	want("DB.Page of a binary record", p, err, &fresh)
	var scanned []*Page
	if err := db.ForEachPage(func(p *Page) error { scanned = append(scanned, p); return nil }); err != nil || len(scanned) != 2 {
		t.Fatalf("ForEachPage: %d records, %v", len(scanned), err)
	}
	want("ForEachPage, JSON", scanned[0], nil, &old)
	want("ForEachPage, binary", scanned[1], nil, &fresh)
	if err := db.ForEachSkipped(func(p *Page) error { want("ForEachSkipped", p, nil, &skipped); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.ForEachSkippedUnder("http://a/", func(p *Page) error { want("ForEachSkippedUnder", p, nil, &skipped); return nil }); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *Tx) error {
		p, err := tx.GetPage(7)
		want("Tx.GetPage", p, err, &old)
		p, err = tx.GetSkipped(skipped.URL)
		want("Tx.GetSkipped", p, err, &skipped)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodePage: any bytes decode to a page or an error, never a panic; a
// page decoded from binary encodes to a record that decodes, and whose page
// encodes to the same bytes again (compared as bytes: a float may be NaN).
func FuzzDecodePage(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	var p Page
	fill(f, r, reflect.ValueOf(&p).Elem(), "Page")
	f.Add(encodePage(&p))
	f.Add(encodePage(&Page{ID: 1, URL: "http://a/"}))
	j, _ := json.Marshal(&p)
	f.Add(j)
	f.Add([]byte{recordV1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Page
		if err := decodePage(b, &p); err != nil || len(b) == 0 || b[0] != recordV1 {
			return
		}
		again := encodePage(&p)
		var q Page
		if err := decodePage(again, &q); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if third := encodePage(&q); !bytes.Equal(third, again) {
			t.Fatalf("a decoded page does not encode to the same record twice")
		}
	})
}

// BenchmarkPageRecord encodes and decodes a typical page record, binary and
// JSON: ns/op and B/record side by side (BENCHMARKS.md, issue 29).
//
//	go test ./storage -run '^$' -bench PageRecord -count 5
func BenchmarkPageRecord(b *testing.B) {
	p := &Page{
		ID: 123456, URL: "http://127.0.0.2/docs/15/sql-createtable.html", Host: "127.0.0.2", Depth: 3,
		Via: "http://127.0.0.2/docs/15/sql-commands.html", Status: 200, ContentType: "text/html",
		Title: "PostgreSQL: Documentation: 15: CREATE TABLE", Lang: "en", TextLang: "en", TextLangConf: 0.97,
		Class: ClassNear, DuplicateOf: "http://127.0.0.3/pgsql/15.18/sql-createtable.html", OriginalID: 4567,
		Similarity: 0.9375, Method: "minhash", FetchedAt: time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC),
		DurationMS: 3.25, RemoteIP: "127.0.0.2", Words: 1234, Links: 87, Bytes: 45678,
		SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		SHA1:   "X3Z2OPW5GX3GVBK3DGN5XQ2NDZG7J4WC", Simhash: 0x8c3f_1a2b_3c4d_5e6f, HasRaw: true,
		ETag: `"5f3e-61a2b3c4"`, LastModified: "Tue, 01 Dec 2026 10:00:00 GMT",
	}
	bin, js := encodePage(p), func() []byte { j, _ := json.Marshal(p); return j }()
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		var q Page
		for range b.N {
			if err := decodePage(encodePage(p), &q); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(bin)), "B/record")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			j, err := json.Marshal(p)
			if err != nil {
				b.Fatal(err)
			}
			var q Page
			if err := json.Unmarshal(j, &q); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(js)), "B/record")
	})
}
