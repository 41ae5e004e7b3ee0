// Package storefill makes a big crawl store fast from a small real one, to
// measure what reads a whole store (report, export) at scale without
// crawling it (issue 30). Only benchmarks and tests link it.
package storefill

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Fill writes about pages page records into dst by replicating the page
// and skip records of src (with their texts and raw exchanges) under new ids
// and URLs: copy k of a record has id k*stride+id (stride is one more than
// src's largest id) and its URLs, final URL and duplicate_of get the path
// prefix /rK/ after the host, so every copy keeps src's classes, duplicate
// edges and clusters among its own records. The last copy takes a part of
// src's records, a subset the seed picks (each record with the share that
// makes up the count). It returns the page records and skip records
// written.
func Fill(dst, src *storage.DB, pages int, seed uint64) (nPages, nSkipped int, err error) {
	var srcPages []uint64
	var maxID uint64
	if err := src.ForEachPage(func(p *storage.Page) error {
		srcPages = append(srcPages, p.ID)
		maxID = max(maxID, p.ID)
		return nil
	}); err != nil {
		return 0, 0, err
	}
	if len(srcPages) == 0 {
		return 0, 0, errors.New("storefill: the source store holds no page")
	}
	var skipped []*storage.Page
	if err := src.ForEachSkipped(func(p *storage.Page) error {
		skipped = append(skipped, p)
		return nil
	}); err != nil {
		return 0, 0, err
	}
	stride := maxID + 1
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	copies := (pages + len(srcPages) - 1) / len(srcPages)
	lastShare := float64(pages-(copies-1)*len(srcPages)) / float64(len(srcPages))
	const batch = 200
	for k := range copies {
		keep := func() bool { return k < copies-1 || rng.Float64() < lastShare }
		off := uint64(k) * stride
		for i := 0; i < len(srcPages); i += batch {
			err := dst.Update(func(tx *storage.Tx) error {
				for _, id := range srcPages[i:min(i+batch, len(srcPages))] {
					if !keep() {
						continue
					}
					p, err := src.Page(id)
					if err != nil {
						return err
					}
					rewrite(p, k, off)
					p.ID = id + off
					if err := tx.PutPage(p); err != nil {
						return err
					}
					if text, err := src.Text(id); err == nil {
						if err := tx.PutText(p.ID, text); err != nil {
							return err
						}
					} else if !errors.Is(err, storage.ErrNotFound) {
						return err
					}
					if req, resp, err := src.Raw(id); err == nil {
						if err := tx.PutRaw(p.ID, req, resp); err != nil {
							return err
						}
					} else if !errors.Is(err, storage.ErrNotFound) {
						return err
					}
					nPages++
				}
				return nil
			})
			if err != nil {
				return nPages, nSkipped, fmt.Errorf("storefill: copy %d: %w", k, err)
			}
		}
		for i := 0; i < len(skipped); i += batch {
			err := dst.Update(func(tx *storage.Tx) error {
				for _, s := range skipped[i:min(i+batch, len(skipped))] {
					if !keep() {
						continue
					}
					p := *s
					rewrite(&p, k, off)
					if err := tx.PutSkipped(&p); err != nil {
						return err
					}
					nSkipped++
				}
				return nil
			})
			if err != nil {
				return nPages, nSkipped, fmt.Errorf("storefill: copy %d: %w", k, err)
			}
		}
	}
	for _, name := range []string{storage.MetaSeeds, storage.MetaStarted, storage.MetaFinished, storage.MetaRequests, storage.MetaComplete, storage.MetaConfig} {
		if v, err := src.GetMeta(name); err == nil {
			if err := dst.PutMeta(name, v); err != nil {
				return nPages, nSkipped, err
			}
		}
	}
	return nPages, nSkipped, nil
}

// rewrite moves p's URLs and ids into copy k.
func rewrite(p *storage.Page, k int, off uint64) {
	p.URL, p.FinalURL, p.DuplicateOf, p.Canonical = copyURL(p.URL, k), copyURL(p.FinalURL, k), copyURL(p.DuplicateOf, k), copyURL(p.Canonical, k)
	for i, r := range p.Redirects {
		p.Redirects[i] = copyURL(r, k)
	}
	if p.OriginalID != 0 {
		p.OriginalID += off
	}
}

// copyURL puts /rK after the host of u: "http://h/a" becomes "http://h/r3/a".
func copyURL(u string, k int) string {
	if k == 0 || u == "" {
		return u
	}
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	j := strings.IndexByte(u[i+3:], '/')
	if j < 0 {
		return u + "/r" + strconv.Itoa(k)
	}
	j += i + 3
	return u[:j] + "/r" + strconv.Itoa(k) + u[j:]
}
