// Package bigstore fills a crawl store with many realistic records fast,
// through the storage API, to measure what a store of a million pages costs
// without crawling one (issue 30): page records, visible texts, raw
// responses, dedup signatures, seen marks and queue entries, as a crawl of
// hosts on loopback addresses would leave them, killed mid-run.
package bigstore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Options says what to write.
type Options struct {
	Pages  int      // page records (with text, raw response and signature)
	Queued int      // queue entries (URLs seen, not fetched)
	Hosts  []string // host:port of the pages (the crawl's seeds are their roots)
	Seed   uint64   // of the texts and signatures
	Words  int      // words of a page's text (0: 600)
}

// Fill writes o's records into db as a crawl with the default configuration
// killed mid-run: its run mark is left open.
func Fill(db *storage.DB, o Options) error {
	if o.Words == 0 {
		o.Words = 600
	}
	cfg := configs.Default()
	det, err := dedup.New(crawl.DedupOptions(cfg.Dedup))
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(o.Seed, 30))
	voc := make([]string, 5000)
	for i := range voc {
		voc[i] = fmt.Sprintf("w%x", r.Uint32())
	}
	// A pool of real signatures; each page's is one of them with its
	// samples and keys drawn anew, so no two pages share a key.
	pool := make([]*dedup.Signature, 16)
	texts := make([]string, len(pool))
	for i := range pool {
		toks := make([]string, o.Words)
		for j := range toks {
			toks[j] = voc[int(r.ExpFloat64()*500)%len(voc)]
		}
		pool[i], texts[i] = det.Sign(toks), strings.Join(toks, " ")
	}
	seeds := make([]string, len(o.Hosts))
	for i, h := range o.Hosts {
		seeds[i] = "http://" + h + "/"
	}
	const batch = 200
	seq := uint64(1)
	for done := 0; done < o.Pages+o.Queued; {
		err := db.Update(func(tx *storage.Tx) error {
			for i := done; i < min(done+batch, o.Pages+o.Queued); i++ {
				h := o.Hosts[i%len(o.Hosts)]
				u := fmt.Sprintf("http://%s/p/%d.html", h, i)
				id := tx.NewID()
				if err := tx.MarkSeen(u, id); err != nil {
					return err
				}
				if i >= o.Pages {
					it := frontier.Item{ID: id, URL: u, Depth: 3, Via: seeds[i%len(seeds)], Host: frontier.HostKey(u), Seq: seq}
					seq++
					if err := tx.PutQueue(it); err != nil {
						return err
					}
					continue
				}
				k := i % len(pool)
				s := *pool[k]
				s.Exact, s.Simhash = r.Uint64(), r.Uint64()
				s.Sketch, s.Super = append([]uint64(nil), s.Sketch...), append([]uint64(nil), s.Super...)
				for j := range s.Sketch {
					s.Sketch[j] ^= r.Uint64()
				}
				for j := range s.Super {
					s.Super[j] ^= r.Uint64() & 0xffff
				}
				sb, err := s.MarshalBinary()
				if err != nil {
					return err
				}
				body := "<html><head><title>page " + strconv.Itoa(i) + "</title></head><body><p>" + texts[k] + "</p></body></html>"
				p := &storage.Page{ID: id, URL: u, Host: frontier.HostKey(u), Depth: 2, Via: seeds[i%len(seeds)], Status: 200,
					ContentType: "text/html; charset=utf-8", Title: "page " + strconv.Itoa(i), Class: storage.ClassUnique,
					FetchedAt: time.Now().UTC(), DurationMS: 3.2, RemoteIP: strings.Split(h, ":")[0], Words: o.Words, Links: 20,
					Bytes: len(body), SHA256: fmt.Sprintf("%064x", r.Uint64()), SHA1: fmt.Sprintf("%032X", r.Uint64()), Simhash: s.Simhash, HasRaw: true}
				if err := tx.PutPage(p); err != nil {
					return err
				}
				if err := tx.PutText(id, texts[k]); err != nil {
					return err
				}
				if err := tx.PutSignature(id, sb); err != nil {
					return err
				}
				req := "GET /p/" + strconv.Itoa(i) + ".html HTTP/1.1\r\nHost: " + h + "\r\n\r\n"
				resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + body
				if err := tx.PutRaw(id, []byte(req), []byte(resp)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done = min(done+batch, o.Pages+o.Queued)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	for _, m := range []struct{ k, v string }{
		{storage.MetaConfig, string(b)}, {storage.MetaURLTokens, "in-place"},
		{storage.MetaStarted, time.Now().UTC().Format(time.RFC3339Nano)},
		{storage.MetaRequests, strconv.Itoa(o.Pages)}, {storage.MetaPagesSpent, "0"},
		{storage.MetaPagesCommitted, strconv.Itoa(o.Pages)}, {storage.MetaRunOpen, "true"},
	} {
		if err := db.PutMeta(m.k, []byte(m.v)); err != nil {
			return err
		}
	}
	return db.PutSeeds(seeds)
}
