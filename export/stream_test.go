package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// genStore is a crawl store generated on the fly: it holds nothing per
// record, so the live heap of an export over it is the export's own. Of
// every 10 pages, 2 are exact duplicates and 1 a near duplicate of the page
// before, 1 an error page; every 10th page has a skip record naming it.
type genStore struct{ pages int }

const genText = 2048 // bytes of text a page

func (g genStore) url(id uint64) string {
	return fmt.Sprintf("http://host-%d.example.test/documentation/section/page-%08d.html", id%97, id)
}

func (g genStore) page(id uint64) *storage.Page {
	p := &storage.Page{ID: id, URL: g.url(id), Host: "h", Status: 200, Class: storage.ClassUnique, Words: 300, SHA1: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}
	switch id % 10 {
	case 2, 3:
		p.Class, p.OriginalID, p.DuplicateOf, p.Method = storage.ClassExact, id-id%10+1, g.url(id-id%10+1), "sha256"
	case 5:
		p.Class, p.OriginalID, p.DuplicateOf, p.Similarity, p.Method = storage.ClassNear, id-1, g.url(id-1), 0.93, "simhash"
	case 9:
		p.Class, p.Status, p.Error = storage.ClassError, 0, "connection refused"
	default:
		p.HasRaw = true
	}
	return p
}

func (g genStore) ForEachPage(fn func(*storage.Page) error) error {
	for id := uint64(1); id <= uint64(g.pages); id++ {
		if err := fn(g.page(id)); err != nil {
			return err
		}
	}
	return nil
}

func (g genStore) ForEachSkipped(fn func(*storage.Page) error) error {
	for id := uint64(10); id <= uint64(g.pages); id += 10 {
		u := g.url(id)
		if err := fn(&storage.Page{URL: strings.Replace(u, "host-", "mirror-", 1), Class: storage.ClassMirrorSkipped, OriginalID: id, DuplicateOf: u, Method: "mirror"}); err != nil {
			return err
		}
	}
	return nil
}

func (g genStore) Page(id uint64) (*storage.Page, error) {
	if id == 0 || id > uint64(g.pages) {
		return nil, storage.ErrNotFound
	}
	return g.page(id), nil
}

func (g genStore) Text(id uint64) (string, error) {
	if g.page(id).Class == storage.ClassError {
		return "", storage.ErrNotFound
	}
	return strings.Repeat(fmt.Sprintf("word%d ", id%10), genText/6), nil
}

func (g genStore) Raw(id uint64) ([]byte, []byte, error) {
	body := []byte(strings.Repeat("<p>page</p>", genText/11))
	return []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), append([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), body...), nil
}

func (g genStore) GetMeta(string) ([]byte, error) { return nil, storage.ErrNotFound }

// heapWriter discards what is written and samples the live heap (after a
// collection) while the export writes, when its state is all built.
type heapWriter struct {
	peak   uint64
	writes int
}

func (h *heapWriter) Write(b []byte) (int, error) {
	h.writes++
	if h.writes&(h.writes-1) != 0 && h.writes%128 != 0 {
		return len(b), nil // sampled at the 1st, 2nd, 4th, 8th ... write and every 128th
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.peak = max(h.peak, m.HeapAlloc)
	return len(b), nil
}

// exportHeap runs export over a generated store of n pages and returns the
// peak live heap while it wrote, and its output counted.
func exportHeap(t *testing.T, n int, export func(io.Writer, genStore) (int, error)) (peak uint64, records int) {
	t.Helper()
	runtime.GC()
	hw := &heapWriter{}
	// Small writes (4 KiB), so that the heap is sampled every few records.
	bw := bufio.NewWriterSize(hw, 4096)
	records, err := export(bw, genStore{pages: n})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if hw.writes < 16 {
		t.Fatalf("%d writes for %d pages: too few samples of the heap", hw.writes, n)
	}
	return hw.peak, records
}

// The sizes of two generated stores: the bound is on the growth between
// them, so that what does not grow with the store (buffers, the records in
// flight, Go's runtime) cancels out.
const streamSmall, streamLarge = 2000, 18000

// inFlight bounds the live heap an export may hold that does not grow with
// the store: the records queued for writing (2 x GOMAXPROCS, each with its
// text and raw exchange), the 64 KiB buffers. A collection's timing can move
// it between the two samples.
func inFlight() uint64 {
	return uint64(4*runtime.GOMAXPROCS(0)+8)*(3*genText+4096) + 4*64<<10
}

// TestJSONLStreamHeap: JSONL export's live heap grows with the store by at
// most its fixed-size state per record (the clustering's id, parent,
// representative, smallest id and up to two URL hashes, each slice grown to
// at most twice its length) and, per member of a cluster, the member listed
// in its representative's duplicates (the Member and its URLs), never by the
// records or their texts (issue 30: 11.8 GB for 927,554 records). With All,
// every record is written once.
func TestJSONLStreamHeap(t *testing.T) {
	run := func(w io.Writer, g genStore) (int, error) {
		return JSONL(w, g, JSONLOptions{All: true})
	}
	small, nSmall := exportHeap(t, streamSmall, run)
	large, nLarge := exportHeap(t, streamLarge, run)
	for _, c := range []struct{ got, pages int }{{nSmall, streamSmall}, {nLarge, streamLarge}} {
		if want := c.pages + c.pages/10; c.got != want {
			t.Errorf("%d pages: %d records written, want every page and skip record once: %d", c.pages, c.got, want)
		}
	}
	records := uint64(nLarge - nSmall)
	perRecord := 2*(unsafe.Sizeof(uint64(0))+unsafe.Sizeof(int32(0))+unsafe.Sizeof(false)+2*unsafe.Sizeof(urlNode{})) +
		unsafe.Sizeof(int32(0)) + unsafe.Sizeof(uint64(0))
	// Members: 3 duplicates of every 10 pages and the skip record, each
	// with its URL and the URL it names, allocated in size classes at most
	// 25% larger for these lengths (64 to 96 bytes).
	g := genStore{}
	urlBytes := uint64(len(g.url(1))*5/4 + 1)
	perMember := unsafe.Sizeof(Member{}) + unsafe.Sizeof(int32(0)) + 2*uintptr(urlBytes)
	members := records * 4 / 11
	bound := records*uint64(perRecord) + members*uint64(perMember) + inFlight()
	t.Logf("live heap %d B at %d records, %d B at %d: %.0f B a record; bound %d B growth (%d B a record, %d a member, %d in flight)",
		small, nSmall, large, nLarge, float64(int64(large)-int64(small))/float64(records), bound, perRecord, perMember, inFlight())
	if large > small && large-small > bound {
		t.Errorf("live heap grew %d B from %d to %d records, over the bound %d B of the per-record state", large-small, nSmall, nLarge, bound)
	}
}

// TestWARCStreamHeap: WARC export's live heap grows with the store by at
// most its entry per unique page (id and response record id, slice grown to
// at most twice its length), never by the originals' URIs or the records.
func TestWARCStreamHeap(t *testing.T) {
	run := func(w io.Writer, g genStore) (int, error) {
		return WARC(w, g, WARCOptions{IncludeDuplicates: true, Uncompressed: true})
	}
	small, nSmall := exportHeap(t, streamSmall, run)
	large, nLarge := exportHeap(t, streamLarge, run)
	// warcinfo, then request + response of each unique page (6 of 10) and
	// a metadata record for each duplicate (3; none kept its raw exchange).
	for _, c := range []struct{ got, pages int }{{nSmall, streamSmall}, {nLarge, streamLarge}} {
		if want := 1 + c.pages/10*(2*6+3); c.got != want {
			t.Errorf("%d pages: %d records, want %d", c.pages, c.got, want)
		}
	}
	pages := uint64(streamLarge - streamSmall)
	bound := pages*6/10*2*uint64(unsafe.Sizeof(originalID{})) + inFlight()
	t.Logf("live heap %d B at %d pages, %d B at %d: %.0f B a page; bound %d B growth", small, streamSmall, large, streamLarge,
		float64(int64(large)-int64(small))/float64(pages), bound)
	if large > small && large-small > bound {
		t.Errorf("live heap grew %d B from %d to %d pages, over the bound %d B of the per-page state", large-small, streamSmall, streamLarge, bound)
	}
}

// TestJSONLStreamClusters: on the generated store, every representative
// lists exactly the other records of its cluster, and every record of a
// cluster names it.
func TestJSONLStreamClusters(t *testing.T) {
	var b bytes.Buffer
	if _, err := JSONL(&b, genStore{pages: 500}, JSONLOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	byCluster := map[string][]string{}
	listed := map[string][]string{}
	reps := map[string]bool{}
	dec := json.NewDecoder(&b)
	for dec.More() {
		var r Record
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Representative {
			reps[r.Cluster] = true
			for _, m := range r.Duplicates {
				listed[r.Cluster] = append(listed[r.Cluster], m.URL)
			}
		} else {
			byCluster[r.Cluster] = append(byCluster[r.Cluster], r.URL)
		}
	}
	if len(reps) != 500/10*6 {
		t.Errorf("%d representatives, want the %d unique pages", len(reps), 500/10*6)
	}
	n := 0
	for c := range reps {
		if fmt.Sprint(listed[c]) != fmt.Sprint(byCluster[c]) {
			t.Errorf("cluster %s: representative lists %v, the records of the cluster are %v", c, listed[c], byCluster[c])
		}
		n += len(byCluster[c])
	}
	if n != 500/10*4 {
		t.Errorf("%d records in clusters with a representative, want the %d duplicates and skip records", n, 500/10*4)
	}
}
