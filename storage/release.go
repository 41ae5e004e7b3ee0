package storage

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Badger writes its value log and builds its tables through memory-mapped
// files, and reads them the same way. Every page of them the crawl wrote or
// read stays mapped into the process, counted in its resident set, until
// Badger closes the file: the value log holds each page's raw response and
// text, so the crawler's RSS grew with everything it had fetched (200 MB of
// the corpus crawl's 330 MB peak), though the kernel could drop those pages
// at any time. A crawler that writes with write(2), as wget does, leaves
// them in the page cache, outside its RSS.
//
// The releaser puts the store on that footing: after each memtable's worth
// of bytes written, a goroutine asks the kernel to reclaim the pages of the
// store's value logs, tables and write-ahead logs (.mem, appended to and
// read only to replay them after a crash) with MADV_PAGEOUT (see
// release_linux.go). It is advice, never a change of content: a page read
// again is read back from the file (or the page cache), and dirty pages are
// written back first.

// releaser runs release after every `every` bytes written, on a goroutine
// that Close stops.
type releaser struct {
	every   int64
	written atomic.Int64
	release func()
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// newReleaser starts a releaser; release nil (a platform without one, or a
// read-only store) returns nil, whose methods do nothing.
func newReleaser(every int64, release func()) *releaser {
	if release == nil || every <= 0 {
		return nil
	}
	r := &releaser{every: every, release: release, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case <-r.stop:
				return
			case <-r.kick:
				r.release()
			}
		}
	}()
	return r
}

// wrote counts n bytes written, and wakes the goroutine each time the count
// passes a multiple of every. It never blocks: a release under way absorbs
// the kicks that come during it.
func (r *releaser) wrote(n int) {
	if r == nil || n <= 0 {
		return
	}
	after := r.written.Add(int64(n))
	if after/r.every != (after-int64(n))/r.every {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// close stops the goroutine and waits for it.
func (r *releaser) close() {
	if r == nil {
		return
	}
	close(r.stop)
	r.wg.Wait()
}

// addrRange is a range of the process's addresses, [start, end).
type addrRange struct{ start, end uintptr }

// storeMappings picks out of maps (the text of /proc/self/maps) the shared
// mappings of the value log, table and write-ahead log files in dir (an absolute path with
// symbolic links resolved, as the kernel writes it). Files deleted while
// mapped are left out: Badger unmaps them.
func storeMappings(maps []byte, dir string) []addrRange {
	var out []addrRange
	for len(maps) > 0 {
		line := maps
		if i := bytes.IndexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		// start-end perms offset dev inode path
		rest := string(line)
		var f [5]string
		for i := range f {
			rest = strings.TrimLeft(rest, " ")
			j := strings.IndexByte(rest, ' ')
			if j < 0 {
				rest = ""
				break
			}
			f[i], rest = rest[:j], rest[j:]
		}
		path := strings.TrimLeft(rest, " ")
		if len(f[1]) != 4 || f[1][3] != 's' || filepath.Dir(path) != dir {
			continue
		}
		if ext := filepath.Ext(path); ext != ".vlog" && ext != ".sst" && ext != ".mem" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, addrRange{uintptr(start), uintptr(end)})
	}
	return out
}

// ReleaseMapped asks the kernel now to reclaim the pages of the store's
// files mapped into the process, as the releaser does after writes: a
// reader of the whole store (report, export) calls it every so often, so
// that what it read does not stay in its resident set (issue 30). It is
// advice: nothing read changes.
func (d *DB) ReleaseMapped() {
	if release := mappedRelease(d.dir, d.logger); release != nil {
		release()
	}
}
