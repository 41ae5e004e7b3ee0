package benchreport

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const traces = `File: crawler
Type: cpu
Duration: 12.24s, Total samples = 8.37s (68.36%)
-----------+-------------------------------------------------------
      10ms   runtime.memclrNoHeapPointers
             runtime.mallocgc
             golang.org/x/net/html.(*parser).addElement (inline)
             github.com/PuerkitoBio/goquery.NewDocumentFromReader
             github.com/horseshoe-crawler/horseshoe/parse.Parse
             github.com/horseshoe-crawler/horseshoe/crawl.(*Engine).handle
-----------+-------------------------------------------------------
      30ms   github.com/horseshoe-crawler/horseshoe/dedup.(*signer).minhash
             github.com/horseshoe-crawler/horseshoe/crawl.(*Engine).handle
-----------+-------------------------------------------------------
     1.20s   github.com/dgraph-io/badger/v4/skl.(*node).key
             github.com/dgraph-io/badger/v4.(*DB).doWrites.func1
-----------+-------------------------------------------------------
      20ms   runtime.scanobject
             runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
      40ms   internal/poll.(*FD).Read
             net.(*conn).Read
             net/http.(*persistConn).Read
-----------+-------------------------------------------------------
`

func TestParseTracesAndShares(t *testing.T) {
	samples, err := ParseTraces(strings.NewReader(traces))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 5 {
		t.Fatalf("%d samples, want 5", len(samples))
	}
	if samples[0].Frames[2] != "golang.org/x/net/html.(*parser).addElement" {
		t.Errorf("inline suffix kept: %q", samples[0].Frames[2])
	}
	rows, total := Shares(samples)
	if total != 1300*time.Millisecond {
		t.Errorf("total %v, want 1.3s", total)
	}
	want := map[string]time.Duration{
		"parse": 10 * time.Millisecond, "dedup": 30 * time.Millisecond, "storage": 1200 * time.Millisecond,
		"runtime/GC": 20 * time.Millisecond, "fetch": 40 * time.Millisecond,
	}
	for _, r := range rows {
		if r.Time != want[r.Stage] {
			t.Errorf("%s: %v, want %v", r.Stage, r.Time, want[r.Stage])
		}
		if r.Stage == "parse" && r.Alloc != 1 {
			t.Errorf("parse alloc share %v, want 1", r.Alloc)
		}
	}
	if !strings.Contains(StageTable(rows, total), "| storage | 1.20 | 92.3% | 0% |") {
		t.Errorf("table:\n%s", StageTable(rows, total))
	}
	if _, err := ParseTraces(strings.NewReader("File: x\n")); !errors.Is(err, ErrFormat) {
		t.Errorf("no traces: err = %v", err)
	}
}

func TestStageOf(t *testing.T) {
	tests := []struct {
		frames []string
		want   string
	}{
		{[]string{"crypto/sha256.block", "github.com/horseshoe-crawler/horseshoe/crawl.fillFromResult"}, "engine"},
		{[]string{"github.com/nlnwa/whatwg-url/url.(*parser).Parse", "github.com/horseshoe-crawler/horseshoe/parse.Parse"}, "parse"},
		{[]string{"github.com/nlnwa/whatwg-url/url.(*parser).Parse", "github.com/horseshoe-crawler/horseshoe/frontier.Canonicalize"}, "frontier"},
		{[]string{"encoding/json.Marshal", "github.com/horseshoe-crawler/horseshoe/storage.(*Tx).PutPage"}, "storage"},
		{[]string{"github.com/horseshoe-crawler/horseshoe/mirror.(*Detector).Compare"}, "mirror"},
		{[]string{"github.com/horseshoe-crawler/horseshoe/fetch.(*Fetcher).Fetch"}, "fetch"},
		{[]string{"github.com/horseshoe-crawler/horseshoe/internal/loopweb.Start"}, "other"},
		{[]string{"runtime.futex", "runtime.findRunnable", "runtime.schedule"}, "runtime/GC"},
		{[]string{"syscall.Syscall", "os.(*File).Write", "main.main"}, "other"},
		{[]string{"runtime.memmove", "crypto/tls.(*Conn).Read"}, "fetch"},
	}
	for _, tt := range tests {
		if got := StageOf(tt.frames); got != tt.want {
			t.Errorf("StageOf(%v) = %s, want %s", tt.frames, got, tt.want)
		}
	}
}
