package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/textproto"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// ErrNoRawResponse marks a page whose raw response was not kept
// (storage.keep_raw: false), so its main text cannot be extracted.
var ErrNoRawResponse = errors.New("no raw response kept (storage.keep_raw is false)")

// hasMainText reports whether p is a page whose HTML was parsed, the
// pages that have a main text: unique pages and duplicates.
func hasMainText(p *storage.Page) bool {
	switch p.Class {
	case storage.ClassUnique, storage.ClassExact, storage.ClassNear:
		return p.ID != 0
	}
	return false
}

// pageMainText extracts the main text of p from its stored raw response,
// decoded to UTF-8 as the crawl decoded it.
func pageMainText(st Store, p *storage.Page) (string, error) {
	if !p.HasRaw {
		return "", ErrNoRawResponse
	}
	_, resp, err := st.Raw(p.ID)
	if err != nil {
		return "", fmt.Errorf("raw response: %w", err)
	}
	i := bytes.Index(resp, []byte("\r\n\r\n"))
	if i < 0 {
		return "", errors.New("raw response without the blank line after its header")
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(resp[:i+4])))
	if _, err := tp.ReadLine(); err != nil { // the status line
		return "", fmt.Errorf("raw response: %w", err)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return "", fmt.Errorf("raw response header: %w", err)
	}
	page, _ := fetch.ToUTF8(resp[i+4:], h.Get("Content-Type"))
	u := p.URL
	if p.FinalURL != "" {
		u = p.FinalURL
	}
	return MainText(page, u)
}

// mainTextWriter writes JSONL records in the order they are given while
// up to workers pages have their main text extracted at once: extraction
// takes milliseconds a page, most of an export's time.
type mainTextWriter struct {
	st      Store
	o       JSONLOptions
	encode  func(*Record) error
	work    chan *pendingRecord
	order   chan *pendingRecord // in submission order, at most 2 x workers waiting
	wg      sync.WaitGroup
	done    chan struct{} // closed when the writer has drained order
	err     atomic.Pointer[error]
	written int
	extract bool // main text asked for
}

type pendingRecord struct {
	p     *storage.Page
	r     Record
	ready chan struct{}
	text  string
	err   error
}

func newMainTextWriter(st Store, o JSONLOptions, encode func(*Record) error) *mainTextWriter {
	workers := o.MainTextWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	w := &mainTextWriter{st: st, o: o, encode: encode, work: make(chan *pendingRecord),
		order: make(chan *pendingRecord, 2*workers), done: make(chan struct{}), extract: o.MainText || o.MainTextInText}
	if !w.extract {
		workers = 0
	}
	for range workers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for pr := range w.work {
				pr.text, pr.err = pageMainText(st, pr.p)
				close(pr.ready)
			}
		}()
	}
	go w.write()
	return w
}

// add queues r, the record of p, to be written once p's main text is in.
func (w *mainTextWriter) add(p *storage.Page, r Record) error {
	if err := w.err.Load(); err != nil {
		return *err
	}
	pr := &pendingRecord{p: p, r: r, ready: make(chan struct{})}
	w.order <- pr
	if w.extract && hasMainText(p) {
		w.work <- pr
	} else {
		close(pr.ready)
	}
	return nil
}

func (w *mainTextWriter) write() {
	defer close(w.done)
	for pr := range w.order {
		<-pr.ready
		if w.err.Load() != nil {
			continue // drain, so that add never blocks
		}
		if pr.err != nil && w.o.MainTextFailed != nil {
			w.o.MainTextFailed(pr.p, pr.err)
		}
		r := &pr.r
		if pr.err != nil {
			r.MainTextError = pr.err.Error()
		}
		if errors.Is(pr.err, storage.ErrDamaged) {
			r.Damaged = true // the raw response is lost: no main text
		}
		text := pr.text
		switch {
		case w.o.MainTextInText:
			r.Text = text
		case w.o.MainText:
			r.MainText = &text
		}
		if err := w.encode(r); err != nil {
			w.err.Store(&err)
			continue
		}
		w.written++
		if r.Damaged && w.o.Damaged != nil {
			w.o.Damaged(pr.p)
		}
	}
}

// close waits for every queued record and returns the number written and
// the first write error.
func (w *mainTextWriter) close() (int, error) {
	close(w.work)
	close(w.order)
	<-w.done
	w.wg.Wait()
	if err := w.err.Load(); err != nil {
		return w.written, *err
	}
	return w.written, nil
}
