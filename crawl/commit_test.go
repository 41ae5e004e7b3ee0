package crawl

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// fakeFetcher answers from a table and counts requests.
type fakeFetcher struct {
	res   map[string]*fetch.Result
	err   map[string]error
	calls int
}

func (f *fakeFetcher) Fetch(_ context.Context, u string) (*fetch.Result, error) {
	f.calls++
	if err := f.err[u]; err != nil {
		return f.res[u], err
	}
	return f.res[u], nil
}

func htmlResult(u string, status int, body string) *fetch.Result {
	return &fetch.Result{URL: u, FinalURL: u, Status: status, Proto: "HTTP/1.1", IsHTML: true, ContentType: "text/html",
		Header: http.Header{"Content-Type": {"text/html"}}, RawBody: []byte(body), Body: []byte(body)}
}

type refuseAll struct{}

func (refuseAll) CheckHost(string) error { return errors.New("metadata address") }

const pageBody = `<html><head><title>T</title></head><body><p>the quick brown fox jumps over the lazy dog and keeps running through the long grass
of the meadow until the evening comes and the stars appear over the quiet hills far away</p><a href="/next">next</a></body></html>`

// TestHandleCommit drives one lease through the worker and the commit with
// fakes: the lease is released once, and the page's whole effect is one
// store transaction (record, queue entry gone, links queued and pushed,
// dependents of a failure queued again).
func TestHandleCommit(t *testing.T) {
	const u = "http://a.test/p"
	tests := []struct {
		name     string
		res      *fetch.Result
		err      error
		requeue  bool // the frontier takes the URL back (back-off)
		opts     Options
		setup    func(s *fakeStore)
		class    storage.Class // "" = no record
		errClass string
		queued   []string // URLs with a queue entry afterwards
		pushed   []string
		requests int
		check    func(t *testing.T, s *fakeStore, id uint64)
	}{
		{name: "unique page", res: htmlResult(u, 200, pageBody), class: storage.ClassUnique,
			queued: []string{"http://a.test/next"}, pushed: []string{"http://a.test/next"}, requests: 1,
			check: func(t *testing.T, s *fakeStore, id uint64) {
				if s.texts[id] == "" || len(s.sigs[id]) == 0 {
					t.Error("text or signature not stored")
				}
				if string(s.meta["requests"]) != "1" {
					t.Errorf("requests meta %q", s.meta["requests"])
				}
			}},
		{name: "raw exchange kept", res: htmlResult(u, 200, pageBody), opts: Options{KeepRaw: true}, class: storage.ClassUnique,
			queued: []string{"http://a.test/next"}, pushed: []string{"http://a.test/next"}, requests: 1,
			check: func(t *testing.T, s *fakeStore, id uint64) {
				raw := s.raw[id]
				if !bytes.HasPrefix(raw[0], []byte("GET /p HTTP/1.1\r\n")) || !bytes.HasSuffix(raw[1], []byte(pageBody)) || !s.pages[id].HasRaw {
					t.Errorf("raw exchange %q / %q", raw[0], raw[1])
				}
			}},
		{name: "HTTP 404 queues the copies waiting on it", res: htmlResult(u, 404, "gone"), class: storage.ClassError, errClass: "http",
			setup: func(s *fakeStore) {
				s.deps[u] = []storage.Dependent{{URL: "http://b.test/p", Depth: 1}}
			},
			queued: []string{"http://b.test/p"}, pushed: []string{"http://b.test/p"}, requests: 1,
			check: func(t *testing.T, s *fakeStore, id uint64) {
				if len(s.deps[u]) != 0 {
					t.Errorf("dependents left: %v", s.deps[u])
				}
			}},
		{name: "redirect queues its target", opts: Options{MaxRedirects: 5},
			res: func() *fetch.Result {
				r := htmlResult(u, 301, "")
				r.IsHTML = false
				r.Header.Set("Location", "/q")
				return r
			}(), class: storage.ClassNotHTML, queued: []string{"http://a.test/q"}, pushed: []string{"http://a.test/q"}, requests: 1},
		{name: "connection refused", err: &fetch.Error{URL: u, Class: "connect", Err: errors.New("refused")},
			class: storage.ClassError, errClass: "connect", requests: 1},
		{name: "cancelled fetch is requeued, not recorded", err: &fetch.Error{URL: u, Class: "canceled", Err: context.Canceled},
			requeue: true, requests: 1},
		{name: "back-off: the frontier takes it back", res: htmlResult(u, 503, ""), requeue: true, requests: 1},
		{name: "address policy refuses without a request", opts: Options{Addresses: refuseAll{}},
			class: storage.ClassError, errClass: fetch.ClassPrivate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, s, f := testEngine(t, tc.opts)
			ff := &fakeFetcher{res: map[string]*fetch.Result{u: tc.res}, err: map[string]error{u: tc.err}}
			e.f = ff
			f.requeue = tc.requeue
			if tc.setup != nil {
				tc.setup(s)
			}
			it := frontier.Item{ID: s.NewID(), URL: u, Host: "a.test", Seq: 7}
			s.seen[u] = it.ID
			s.PutQueue(it)
			e.handle(context.Background(), &it)
			if len(f.released) != 1 {
				t.Fatalf("released %d times, want once", len(f.released))
			}
			if ff.calls != tc.requests {
				t.Errorf("%d requests, want %d", ff.calls, tc.requests)
			}
			p := s.pages[it.ID]
			switch {
			case tc.class == "" && p != nil:
				t.Fatalf("recorded %+v, want no record", p)
			case tc.class == "":
				if !slices.Contains(s.queued(), u) {
					t.Error("queue entry of an unrecorded URL deleted")
				}
				return
			case p == nil:
				t.Fatalf("no record, want class %s", tc.class)
			}
			if p.Class != tc.class || p.ErrorClass != tc.errClass {
				t.Errorf("class %s/%s (%s), want %s/%s", p.Class, p.ErrorClass, p.Error, tc.class, tc.errClass)
			}
			if s.updates != 1 {
				t.Errorf("%d transactions, want 1", s.updates)
			}
			if got := s.queued(); !slices.Equal(got, tc.queued) {
				t.Errorf("queued %v, want %v", got, tc.queued)
			}
			if got := f.pushedURLs(); !slices.Equal(got, tc.pushed) {
				t.Errorf("pushed %v, want %v", got, tc.pushed)
			}
			if tc.check != nil {
				tc.check(t, s, it.ID)
			}
		})
	}
}

// TestCommitExactDuplicate: a second page with the same payload is an exact
// duplicate of the first, named by the URL that served the first (its
// redirect target), and its signature is not stored.
func TestCommitExactDuplicate(t *testing.T) {
	e, s, _ := testEngine(t, Options{})
	first := htmlResult("http://a.test/", 200, pageBody)
	first.FinalURL = "http://a.test/index.html"
	second := htmlResult("http://b.test/", 200, pageBody)
	ff := &fakeFetcher{res: map[string]*fetch.Result{"http://a.test/": first, "http://b.test/": second}}
	e.f = ff
	var ids []uint64
	for _, u := range []string{"http://a.test/", "http://b.test/"} {
		it := frontier.Item{ID: s.NewID(), URL: u, Host: frontier.HostKey(u), Seq: 1}
		s.seen[u] = it.ID
		e.handle(context.Background(), &it)
		ids = append(ids, it.ID)
	}
	a, b := s.pages[ids[0]], s.pages[ids[1]]
	if a.Class != storage.ClassUnique || b.Class != storage.ClassExact {
		t.Fatalf("classes %s, %s", a.Class, b.Class)
	}
	if b.OriginalID != a.ID || b.DuplicateOf != "http://a.test/index.html" {
		t.Errorf("duplicate of %d %q, want %d %q", b.OriginalID, b.DuplicateOf, a.ID, "http://a.test/index.html")
	}
	if _, ok := s.sigs[b.ID]; ok {
		t.Error("a duplicate's signature was stored")
	}
	if n := e.Snapshot().ByClass[string(storage.ClassExact)]; n != 1 || e.dups.Load() != 1 {
		t.Errorf("counted %d exact duplicates (%d dups)", n, e.dups.Load())
	}
}

// TestSkipLeasedVerifyPushesCounterpart: a leased copy on a decided mirror
// whose counterpart is unknown queues the counterpart; when the copy is
// then drawn for the verification stream (fetched, not skipped), the
// counterpart must still reach the frontier, or it would stay in the queue
// log, marked seen, unfetched until a resume.
func TestSkipLeasedVerifyPushesCounterpart(t *testing.T) {
	e, s, f := testEngine(t, Options{Mirror: decidedMirror(t, true)})
	const copyURL = "http://b.test/x"
	e.f = &fakeFetcher{res: map[string]*fetch.Result{copyURL: htmlResult(copyURL, 200, pageBody)}}
	it := frontier.Item{ID: s.NewID(), URL: copyURL, Host: "b.test", Seq: 1}
	s.seen[copyURL] = it.ID
	e.handle(context.Background(), &it)
	if !slices.Contains(f.pushedURLs(), "http://a.test/x") {
		t.Errorf("pushed %v: the counterpart queued at lease time is not among them (queue log: %v)", f.pushedURLs(), s.queued())
	}
	if p := s.pages[it.ID]; p == nil || p.Class != storage.ClassUnique {
		t.Errorf("the verification pick was not fetched: %+v", p)
	} else if !p.Verify {
		// Its comparison with the counterpart must count in the
		// verification stream and the loss monitor.
		t.Error("the verification pick drawn at lease time is not marked Verify")
	}
}
