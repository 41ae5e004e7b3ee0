// Package storage keeps a crawl on disk in Badger: page records, raw
// responses, visible text, dedup signatures, the frontier's queues and
// seen-set, robots.txt entries and mirror evidence. It implements the
// persistence interface that frontier/ declares (frontier.Store); crawl/
// adapts its robots.txt entries to fetch.RobotsStore.
//
// Every page is committed in one transaction (its record, raw response,
// text, signature, the removal of its queue entry and the queue entries and
// seen marks of the links it contributed), so a crash between two pages loses
// nothing that was recorded and leaves no half-written page.
//
// Key space (all keys are prefixed by one letter and '/'):
//
//	m/<name>            crawl metadata (schema version, settings, counters)
//	s/<url>             seen URL -> page id (8 bytes)
//	q/<host>\x00<seq>   queued item (JSON), seq big-endian
//	p/<id>              page record (binary, record.go; JSON before issue 29)
//	r/<id>              raw HTTP response (status line, headers, body), compressed
//	w/<id>              raw HTTP request, compressed
//	t/<id>              visible text, compressed
//	g/<id>              dedup signature (dedup.Signature binary form)
//	l/<id>              the page's links on its own origin, as sorted 64-bit hashes (mirror evidence)
//	k/<url>             record of a URL skipped as a copy (mirror_skipped), a page record
//	d/<url>\x00i<id>    a URL skipped because its counterpart <url> was known (JSON);
//	d/<url>\x00u<link>  ... a link skipped without a page record of its own
//	b/<host>            robots.txt entry (JSON)
//	x/<kind>/<key>      mirror evidence and decisions (JSON)
//
// Compressed values are 0xFF then a zstd frame; a value without that prefix,
// as every store before issue 30 holds, is read as it is (codec.go).
package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// SchemaVersion identifies the on-disk layout. A data dir written by another
// version is refused with ErrVersion rather than misread.
const SchemaVersion = "horseshoe-storage-1"

var (
	// ErrLocked means another process has the data dir open.
	ErrLocked = errors.New("data dir is in use by another crawl")
	// ErrVersion means the data dir was written by an incompatible version.
	ErrVersion = errors.New("data dir was written by an incompatible version of Horseshoe")
	// ErrNotDataDir means the directory holds something other than a crawl.
	ErrNotDataDir = errors.New("directory is not a Horseshoe data dir")
	// ErrNotFound is returned for a missing record.
	ErrNotFound = errors.New("not found")
	// ErrDiskFull means the data dir's file system has less free space
	// than Options.MinFreeBytes. Badger writes through memory-mapped files,
	// where running out of space is a fatal signal rather than an error, so
	// the store refuses to write before that can happen.
	ErrDiskFull = errors.New("no space left on device")
)

// DefaultMinFreeBytes is the free space below which the store stops writing.
const DefaultMinFreeBytes = 64 << 20

// Options configures the store.
type Options struct {
	SyncWrites bool // fsync each commit
	// ReadOnly opens for report, export and serve: nothing in the data dir
	// is written, and a damaged store opens with what can still be read
	// (see DB.Damage). One exception: a store a crash left unclean (a
	// write-ahead log to replay) is recovered first, read-write, as a
	// resumed crawl would do; on read-only media that is refused with an
	// error saying so. Badger takes a shared lock, so several readers may
	// open the store at once, but not while a crawl holds it (ErrLocked).
	ReadOnly     bool
	MinFreeBytes int64 // refuse to write below this much free space (0 = DefaultMinFreeBytes, <0 = no check)
	// MaxValueSize is the largest single value a write may hold: a page's
	// raw response or its decoded text (0 = DefaultValueLogFileSize). Badger
	// refuses a value larger than one value log file, so the files are made
	// at least this large (up to MaxValueLogFileSize).
	MaxValueSize int64
	Logger       *slog.Logger
}

// Value log file sizes: the default, and the largest Badger allows.
const (
	DefaultValueLogFileSize = 64 << 20
	MaxValueLogFileSize     = 2<<30 - 1
)

// valueLogFileSize is the size of value log files that hold values of up to
// maxValue bytes (with room for the entry's key and header), in whole MiB:
// Check tells a log preallocated by a crash (twice its file size, zeros
// after the last write) by that.
func valueLogFileSize(maxValue int64) int64 {
	const mib = 1 << 20
	size := (max(DefaultValueLogFileSize, maxValue+mib) + mib - 1) / mib * mib
	return min(size, MaxValueLogFileSize/mib*mib)
}

// DB is an open crawl store. Its methods are safe for concurrent use.
type DB struct {
	db     *badger.DB
	dir    string
	logger *slog.Logger
	nextID atomic.Uint64

	minFree    int64
	spaceMu    sync.Mutex
	spaceAt    time.Time
	spaceErr   error
	spaceEvery time.Duration
	statfsFunc func(dir string) (free int64, err error)

	damage *damageLog
	rel    *releaser // of a writable store: its mapped pages (release.go)

	pageScans, skipScans atomic.Int64 // ForEachPage and ForEachSkipped calls (FullScans)
}

// damageLog collects what a read-only store found damaged: the files Check
// reported and the values that reads could not return.
type damageLog struct {
	mu         sync.Mutex
	found      []Damage          // from Check, at Open
	unreadable map[string]int    // kind ("page texts") -> values not returned
	vlogWhy    map[uint64]string // value-log file id -> why a value could not be read
	lastWhy    string            // why the last value could not be read
	corrupt    bool              // a value read whole did not decode (codec.go)
}

// Open opens (creating if needed) the crawl store in dir.
func Open(dir string, o Options) (*DB, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := checkDir(dir, o.ReadOnly); err != nil {
		return nil, err
	}
	minFree := o.MinFreeBytes
	if minFree == 0 {
		minFree = DefaultMinFreeBytes
	}
	space := &DB{dir: dir, minFree: minFree, spaceEvery: 500 * time.Millisecond, statfsFunc: freeBytes}
	if !o.ReadOnly {
		if err := space.checkSpace(); err != nil {
			return nil, err
		}
	}
	dmg := &damageLog{unreadable: map[string]int{}, vlogWhy: map[uint64]string{}}
	// Check under the lock Badger would take: files a running crawl is
	// rewriting are not damage, the crawl is ErrLocked.
	unlock, err := lockDir(dir, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	defer func() { unlock() }()
	found, res, err := inspectAtOpen(dir, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	var fatal []Damage
	repairs := false // a read would repair damage
	for _, f := range found {
		repairs = repairs || (o.ReadOnly && res.unclean() && !f.Fatal)
		// A crawl does not resume on any damage: Badger would truncate
		// a damaged value log at its first bad entry. Nor is a damaged
		// store that a crash left unclean read: Badger would repair it
		// first, the same way.
		if f.Fatal || !o.ReadOnly || res.unclean() {
			fatal = append(fatal, f)
		}
	}
	if len(fatal) > 0 {
		note := "nothing was read and nothing in the data dir was changed"
		switch {
		case !o.ReadOnly:
			note = "the crawl does not resume on it; nothing in the data dir was changed (report and export read what is left)"
		case repairs:
			note = "the data dir was also not closed cleanly (a crawl crashed or was killed), and reading it would make Badger repair it by cutting the damaged value log; " + note
		}
		return nil, &DamageError{Dir: dir, Damages: fatal, Note: note}
	}
	dmg.found = found
	bo := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{l: logger.With("system", "badger"), damage: dmg}).
		// Checksums: every table block read and every value read from
		// the value log (which Badger skips by default; an unreadable
		// value is then logged, and returned as empty, see get).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		WithSyncWrites(o.SyncWrites).
		WithReadOnly(o.ReadOnly).
		// Small tables: Badger builds them on the Go heap, so their size
		// bounds the crawler's RSS as the frontier grows. A memtable is
		// an arena allocated whole (MemTableSize plus a batch), and its
		// flush to an L0 table holds the table's blocks and their
		// compressed copies, in buffers that double (about 3x the
		// memtable at the end). Two memtables (one written, one being
		// flushed; there were 3 before issue 29) leave out an arena that
		// only helped when flushes fall behind; a write that then finds
		// both full waits for the flush. The block cache holds
		// decompressed table blocks for reads (seen checks, queue
		// entries, page records): 8 MB instead of 32 (the corpus crawl
		// held 11 MB in it at its peak); a miss costs a block read from
		// the mapped table and its decompression. Memtables of 4 MB
		// instead of 8 (issue 29): each arena, and each flush's
		// builders, half the size; twice as many L0 tables and flushes.
		WithMemTableSize(4 << 20).
		WithBaseTableSize(1 << 20).
		WithNumLevelZeroTables(3).
		WithNumLevelZeroTablesStall(8).
		WithValueLogFileSize(valueLogFileSize(o.MaxValueSize)).
		WithNumMemtables(2).
		WithBlockCacheSize(8 << 20).
		WithValueThreshold(4 << 10).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1).
		WithCompactL0OnClose(false)
	// Every level's tables are BaseTableSize. With the default multiplier
	// (2), tables double with each level, and a compaction holds up to
	// 8+splits table builders of 2x the table size each (plus the compressed
	// blocks) on the heap: anonymous memory grew with the data, 314 MB at
	// 1M URLs known and 356 MB at 3M. With 1 it levels off, 237 MB at 1M and
	// 241 MB at 3M (TestScaleBoundedRSS), and compactions are shorter (3M:
	// 33 s against 69 s). The price is more table files (about one per MB of
	// keys and small values), each open and memory-mapped: Go raises the
	// open-file limit to the hard limit, and Linux's default vm.max_map_count
	// (65530) is reached at about 64 GB of tables, far beyond a crawl of
	// 100 M URLs (about 8 GB).
	bo.TableSizeMultiplier = 1
	var db *badger.DB
	for _, name := range res.empty {
		// Empty files a crash left, which Badger cannot open (see
		// residue): the first change the recovery below makes.
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			if o.ReadOnly && (isPermission(err) || errors.Is(err, syscall.EROFS)) {
				return nil, notRecovered(dir, err)
			}
			return nil, fmt.Errorf("cannot open data dir %s: %w", dir, err)
		}
	}
	unlock() // Badger takes its own lock
	unlock = func() {}
	if o.ReadOnly && res.unclean() {
		// A crash left a write-ahead log (.mem) and perhaps table files
		// the MANIFEST does not list. Badger replays the log only when it
		// may write (it cuts the log's unfinished tail, and deletes those
		// tables even when opened read-only), so this one read opens the
		// store read-write and closes it: the one change a read makes to
		// a data dir (the log is flushed to a table, the MANIFEST records
		// it), as a resumed crawl would make it. Check found no damage, so
		// nothing committed is lost. Then it is read read-only, beside
		// other readers. On read-only media the recovery fails: say so.
		logger.Info("the data dir was not closed cleanly: recovering it before reading", "dir", dir)
		db, err = openBadger(bo.WithReadOnly(false))
		if err == nil {
			if err = db.Close(); err == nil {
				db, err = openBadger(bo)
			}
		}
		if err != nil && (isPermission(err) || errors.Is(err, syscall.EROFS)) {
			return nil, notRecovered(dir, err)
		}
	} else {
		db, err = openBadger(bo)
	}
	if err != nil {
		msg := err.Error()
		if errors.Is(err, ErrDamaged) {
			return nil, fmt.Errorf("%w: data dir %s: %s", ErrDamaged, dir, oneLine(strings.TrimPrefix(msg, ErrDamaged.Error()+": ")))
		}
		if strings.Contains(msg, "Cannot acquire directory lock") || strings.Contains(msg, "resource temporarily unavailable") {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		if isPermission(err) {
			return nil, fmt.Errorf("cannot open data dir %s: permission denied: %w", dir, err)
		}
		return nil, fmt.Errorf("cannot open data dir %s: %w", dir, err)
	}
	d := space
	d.db, d.logger, d.damage = db, logger, dmg
	if err := d.checkVersion(o.ReadOnly); err != nil {
		db.Close()
		return nil, err
	}
	var next uint64
	if b, err := d.GetMeta(MetaNextID); err == nil && len(b) == 8 {
		next = binary.BigEndian.Uint64(b)
	}
	if next == 0 {
		next = 1
	}
	d.nextID.Store(next)
	if !o.ReadOnly {
		d.rel = newReleaser(bo.MemTableSize, mappedRelease(dir, logger))
	}
	return d, nil
}

func isPermission(err error) bool {
	return errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "permission denied")
}

// notRecovered is the error of a read-only open of a store a crash left
// unclean, where the recovery could not write (err).
func notRecovered(dir string, err error) error {
	why := "permission denied"
	if errors.Is(err, syscall.EROFS) || strings.Contains(err.Error(), "read-only file system") {
		why = "read-only file system"
	}
	return fmt.Errorf("cannot read data dir %s: it was not closed cleanly (a crawl crashed or was killed), and reading it first needs Badger to recover it, which writes to it: %s; resume the crawl, or read a writable copy", dir, why)
}

// openBadger opens Badger with its panics turned into errors (Check has
// caught what would panic in Badger's own goroutines).
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %s", ErrDamaged, oneLine(fmt.Sprint(r)))
		}
	}()
	return badger.Open(bo)
}

// guard runs fn with a panic from Badger turned into an error.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s", ErrDamaged, oneLine(fmt.Sprint(r)))
		}
	}()
	return fn()
}

func checkDir(dir string, readOnly bool) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if readOnly {
			return fmt.Errorf("data dir %s does not exist", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cannot create data dir: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot open data dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is a file", ErrNotDataDir, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot read data dir: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return fmt.Errorf("%w: %s has files but no Badger MANIFEST", ErrNotDataDir, dir)
	}
	return nil
}

func (d *DB) checkVersion(readOnly bool) error {
	v, err := d.GetMeta(MetaVersion)
	if errors.Is(err, ErrNotFound) {
		empty := true
		_ = d.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
			defer it.Close()
			it.Rewind()
			empty = !it.Valid()
			return nil
		})
		if !empty {
			return fmt.Errorf("%w: no version record", ErrVersion)
		}
		if readOnly {
			return fmt.Errorf("%w: empty store", ErrNotDataDir)
		}
		return d.PutMeta(MetaVersion, []byte(SchemaVersion))
	}
	if err != nil {
		return err
	}
	if string(v) != SchemaVersion {
		return fmt.Errorf("%w: found %q, this build reads %q", ErrVersion, v, SchemaVersion)
	}
	return nil
}

// checkSpace returns ErrDiskFull (wrapped, naming the dir and the figures)
// when the data dir has less than minFree bytes free. The answer is cached
// briefly: statfs is cheap, but not free per page.
func (d *DB) checkSpace() error {
	if d.minFree < 0 {
		return nil
	}
	d.spaceMu.Lock()
	defer d.spaceMu.Unlock()
	if !d.spaceAt.IsZero() && time.Since(d.spaceAt) < d.spaceEvery && d.spaceErr == nil {
		return nil
	}
	d.spaceAt = time.Now()
	free, err := d.statfsFunc(d.dir)
	if err != nil {
		d.spaceErr = nil // cannot tell: do not block the crawl on it
		return nil
	}
	if free < d.minFree {
		d.spaceErr = fmt.Errorf("%w: data dir %s has %d MiB free, the crawl stops below %d MiB (storage.min_free_bytes)",
			ErrDiskFull, d.dir, free>>20, d.minFree>>20)
		return d.spaceErr
	}
	d.spaceErr = nil
	return nil
}

// Close flushes and closes the store.
func (d *DB) Close() error {
	d.rel.close()
	return d.db.Close()
}

// GetMeta returns the metadata value name.
func (d *DB) GetMeta(name string) ([]byte, error) { return d.get(metaKey(name)) }

// PutMeta stores a metadata value.
func (d *DB) PutMeta(name string, v []byte) error {
	if err := d.checkSpace(); err != nil {
		return err
	}
	return d.db.Update(func(txn *badger.Txn) error { return txn.Set(metaKey(name), v) })
}

func (d *DB) get(key []byte) ([]byte, error) {
	var out []byte
	err := guard(func() error {
		return d.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get(key)
			if errors.Is(err, badger.ErrKeyNotFound) {
				return ErrNotFound
			}
			if err != nil {
				return err
			}
			out, err = item.ValueCopy(nil)
			if err == nil {
				err = d.checkValue(item, out)
			}
			return err
		})
	})
	return out, err
}

// ErrUnreadable means a record's value could not be read back (the value log
// that holds it is damaged). It wraps ErrDamaged.
var ErrUnreadable = fmt.Errorf("%w: value unreadable", ErrDamaged)

// checkValue returns ErrUnreadable when Badger returned no bytes for a value
// stored in the value log: Badger logs a failed value-log read (a checksum
// mismatch, a file cut short) and returns an empty value without an error.
func (d *DB) checkValue(item *badger.Item, v []byte) error {
	if len(v) > 0 || item.ValueSize() <= 0 {
		return nil
	}
	d.damage.count(kindOf(item.Key()))
	return fmt.Errorf("%w: key %q", ErrUnreadable, printableKey(item.Key()))
}

func printableKey(k []byte) string {
	if len(k) == 10 && k[1] == '/' {
		return fmt.Sprintf("%c/%d", k[0], binary.BigEndian.Uint64(k[2:]))
	}
	return string(k)
}

// kindOf names the records stored under key's prefix, for damage reports.
func kindOf(key []byte) string {
	if len(key) < 2 || key[1] != '/' {
		return "records"
	}
	switch key[0] {
	case 't':
		return "page texts"
	case 'r':
		return "raw responses"
	case 'w':
		return "raw requests"
	case 'p':
		return "page records"
	case 'k':
		return "skip records"
	case 'g':
		return "dedup signatures"
	case 'l':
		return "link sets"
	case 'q':
		return "queue entries"
	case 'x':
		return "mirror evidence records"
	case 'm':
		return "metadata records"
	case 'd':
		return "dependent records"
	case 'b':
		return "robots.txt entries"
	}
	return "records"
}

func (l *damageLog) count(kind string) {
	l.mu.Lock()
	l.unreadable[kind]++
	l.mu.Unlock()
}

// undecodable counts a value Badger returned whole (its checksum good) that
// does not decode (codec.go).
func (l *damageLog) undecodable(kind string) {
	l.mu.Lock()
	l.unreadable[kind]++
	l.corrupt = true
	l.mu.Unlock()
}

// readFailed records why Badger could not read a value (from its log line).
// Badger logs an "Unable to read" line with the error, then lines naming
// the value pointers (Fid) of the key's versions.
func (l *damageLog) readFailed(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !strings.HasPrefix(msg, "Key: ") {
		switch {
		case strings.Contains(msg, "checksum mismatch"):
			l.lastWhy = "checksum mismatch"
		case strings.Contains(msg, "not found"):
			l.lastWhy = "file missing"
		case strings.Contains(msg, "EOF"), strings.Contains(msg, "offset"):
			l.lastWhy = "file cut short"
		default:
			l.lastWhy = "unreadable"
		}
	}
	if fid, ok := parseFid(msg); ok && l.vlogWhy[fid] == "" {
		l.vlogWhy[fid] = l.lastWhy
	}
}

// Damage returns what a read-only store found damaged: the files Check
// reported at Open, and one entry per value-log file for the values that
// reads since then could not return. Nil when nothing was.
func (d *DB) Damage() []Damage {
	l := d.damage
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]Damage(nil), l.found...)
	if len(l.unreadable) == 0 {
		return out
	}
	kinds := make([]string, 0, len(l.unreadable))
	for k := range l.unreadable {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if l.unreadable[kinds[i]] != l.unreadable[kinds[j]] {
			return l.unreadable[kinds[i]] > l.unreadable[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	var counts []string
	for _, k := range kinds {
		counts = append(counts, fmt.Sprintf("%d %s", l.unreadable[k], k))
	}
	fids := make([]uint64, 0, len(l.vlogWhy))
	for f := range l.vlogWhy {
		fids = append(fids, f)
	}
	sort.Slice(fids, func(i, j int) bool { return fids[i] < fids[j] })
	var files, whys []string
	for _, f := range fids {
		files = append(files, vlogName(f))
		if !slices.Contains(whys, l.vlogWhy[f]) {
			whys = append(whys, l.vlogWhy[f])
		}
	}
	if l.corrupt {
		whys = append(whys, "compressed value does not decode")
	}
	file := "value log"
	if len(files) > 0 {
		file = "value log " + strings.Join(files, ", ")
	}
	what := strings.Join(counts, ", ") + " unreadable"
	if len(whys) > 0 {
		what += " (" + strings.Join(whys, ", ") + ")"
	}
	return append(out, Damage{File: file, What: what})
}

// Unreadable returns how many values of each kind ("page texts", "raw
// responses", ...) reads could not return since Open.
func (d *DB) Unreadable() map[string]int {
	d.damage.mu.Lock()
	defer d.damage.mu.Unlock()
	out := make(map[string]int, len(d.damage.unreadable))
	for k, v := range d.damage.unreadable {
		out[k] = v
	}
	return out
}

func metaKey(name string) []byte { return []byte("m/" + name) }
func seenKey(u string) []byte    { return []byte("s/" + u) }
func idKey(p byte, id uint64) []byte {
	k := []byte{p, '/', 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint64(k[2:], id)
	return k
}
func queueKey(host string, seq uint64) []byte {
	k := make([]byte, 0, len(host)+11)
	k = append(k, "q/"...)
	k = append(k, host...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}
func depKey(counterpart string, d Dependent) []byte {
	k := append([]byte("d/"+counterpart), 0)
	if !d.Seen {
		// A link skipped without a page record has no id of its own:
		// every such dependent of one counterpart is keyed by its URL, so
		// two copies waiting on the same page cannot overwrite each other.
		return append(append(k, 'u'), d.URL...)
	}
	return binary.BigEndian.AppendUint64(append(k, 'i'), d.ID)
}

// Update runs fn in one read-write transaction, retrying on conflict. The
// crawl engine funnels all per-page writes through one committer, so
// conflicts are rare; the retry keeps concurrent writers correct anyway.
//
// No transaction grows without bound: a page with thousands of links, or a
// seed list of thousands of URLs, writes more entries than one Badger
// transaction holds (about 1.2 MB or 12,000 entries with this store's 8 MB
// memtables). When the next write would not fit, the writes so far are
// committed as one part and fn goes on in a fresh transaction, which sees
// them. The parts commit in the order fn wrote them, so a crash between two
// parts leaves a prefix of fn's writes: the engine writes a page's links
// before the page record and the removal of its queue entry, so such a page
// is fetched again on resume and its links already stand. A part that
// conflicts with another writer is written again as it was (the engine
// serializes the writers whose reads matter); a transaction that fit in one
// part is retried whole, as before.
func (d *DB) Update(fn func(tx *Tx) error) error {
	if err := d.checkSpace(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		tx := &Tx{d: d, txn: d.db.NewTransaction(true)}
		err := fn(tx)
		if err == nil {
			err = tx.commitPart()
		}
		tx.txn.Discard()
		if errors.Is(err, badger.ErrConflict) && tx.parts == 0 && attempt < 10 {
			continue
		}
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		return nil
	}
}

// Tx is one write transaction (see Update: it may commit in parts).
type Tx struct {
	d        *DB
	txn      *badger.Txn
	parts    int     // parts committed so far
	ops      []txnOp // the current part's writes, to write again on a conflict
	reserved uint64  // ids below this are covered by a next_id this transaction wrote
	err      error   // a failed write of next_id (NewID returns no error)
}

// txnOp is one write of a transaction part.
type txnOp struct {
	key, value []byte
	delete     bool
}

// set writes key, starting a new part when the current one is full.
func (t *Tx) set(key, value []byte) error {
	return t.write(txnOp{key: key, value: value})
}

// delete removes key, starting a new part when the current one is full.
func (t *Tx) delete(key []byte) error {
	return t.write(txnOp{key: key, delete: true})
}

func (t *Tx) write(op txnOp) error {
	if t.err != nil {
		return t.err
	}
	err := t.apply(op)
	if errors.Is(err, badger.ErrTxnTooBig) && len(t.ops) > 0 {
		if err := t.commitPart(); err != nil {
			return err
		}
		t.txn.Discard()
		t.txn = t.d.db.NewTransaction(true)
		t.ops = t.ops[:0]
		t.parts++
		err = t.apply(op)
	}
	if err != nil {
		return err
	}
	t.ops = append(t.ops, op)
	return nil
}

func (t *Tx) apply(op txnOp) error {
	if op.delete {
		return t.txn.Delete(op.key)
	}
	t.d.rel.wrote(len(op.key) + len(op.value))
	return t.txn.Set(op.key, op.value)
}

// commitPart commits the current part. A part after the first that
// conflicts is written again, blind: the writes before it are committed
// already, so fn cannot be run again.
func (t *Tx) commitPart() error {
	if t.err != nil {
		return t.err
	}
	err := t.txn.Commit()
	for attempt := 0; errors.Is(err, badger.ErrConflict) && t.parts > 0 && attempt < 10; attempt++ {
		err = t.d.db.Update(func(txn *badger.Txn) error {
			for _, op := range t.ops {
				var err error
				if string(op.key) == "m/next_id" && !op.delete && len(op.value) == 8 {
					// Never lower it (see NewID).
					stored, err := storedNextID(txn)
					if err != nil {
						return err
					}
					if stored > binary.BigEndian.Uint64(op.value) {
						continue
					}
				}
				if op.delete {
					err = txn.Delete(op.key)
				} else {
					err = txn.Set(op.key, op.value)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	return err
}

// idBlock is how many page ids one write of next_id reserves.
const idBlock = 1024

// NewID allocates a page id. Ids are never reused, even when the transaction
// that took one fails: the counter lives in memory, and the store's next_id,
// from which a restart counts on, is raised in blocks, in the same part of the
// transaction as (or a part before) the first write that uses the id. next_id
// never goes down: the transaction reads it before writing the larger of it
// and its own reservation, so one that reserved earlier but commits after
// another that raised it conflicts, and is run again (see Update).
func (t *Tx) NewID() uint64 {
	id := t.d.nextID.Add(1) - 1
	if id >= t.reserved {
		next := id + idBlock
		stored, err := storedNextID(t.txn)
		if err != nil && t.err == nil {
			t.err = err
		}
		t.reserved = max(next, stored)
		if err := t.set(metaKey("next_id"), binary.BigEndian.AppendUint64(nil, t.reserved)); err != nil && t.err == nil {
			t.err = err
		}
	}
	return id
}

// storedNextID reads next_id in txn (0 when there is none).
func storedNextID(txn *badger.Txn) (uint64, error) {
	item, err := txn.Get(metaKey("next_id"))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n uint64
	err = item.Value(func(v []byte) error {
		if len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return n, err
}

// SeenID returns the page id of a seen URL.
func (t *Tx) SeenID(u string) (uint64, bool, error) {
	item, err := t.txn.Get(seenKey(u))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var id uint64
	err = item.Value(func(v []byte) error {
		if len(v) == 8 {
			id = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return id, true, err
}

// MarkSeen records u as seen under page id.
func (t *Tx) MarkSeen(u string, id uint64) error {
	return t.set(seenKey(u), binary.BigEndian.AppendUint64(nil, id))
}

// PutQueue stores a queued item under its host and sequence number.
func (t *Tx) PutQueue(it frontier.Item) error {
	b, err := json.Marshal(it)
	if err != nil {
		return err
	}
	return t.set(queueKey(it.Host, it.Seq), b)
}

// DeleteQueue removes a queue entry (its page is recorded).
func (t *Tx) DeleteQueue(host string, seq uint64) error {
	return t.delete(queueKey(host, seq))
}

// PutPage stores a page record.
func (t *Tx) PutPage(p *Page) error {
	return t.set(idKey('p', p.ID), encodePage(p))
}

// DeletePage removes a page record (a skip record whose URL is queued again).
func (t *Tx) DeletePage(id uint64) error { return t.delete(idKey('p', id)) }

// PutRaw stores the raw request and response of page id (compressed, see
// codec.go).
func (t *Tx) PutRaw(id uint64, request, response []byte) error {
	if err := t.putValue(idKey('w', id), request); err != nil {
		return err
	}
	return t.putValue(idKey('r', id), response)
}

// PutText stores the visible text of page id (compressed, see codec.go).
func (t *Tx) PutText(id uint64, text string) error {
	return t.putValue(idKey('t', id), []byte(text))
}

// putValue stores v under key compressed (DB.getValue reads it).
func (t *Tx) putValue(key, v []byte) error {
	b, err := encodeValue(v)
	if err != nil {
		return err
	}
	return t.set(key, b)
}

// PutSignature stores the dedup signature of page id (unique pages only: the
// dedup index is rebuilt from these after a restart).
func (t *Tx) PutSignature(id uint64, sig []byte) error {
	return t.set(idKey('g', id), sig)
}

// PutLinks stores the link hashes of page id (sorted; see mirror.LinkHashes).
func (t *Tx) PutLinks(id uint64, hashes []uint64) error {
	b := make([]byte, 0, 8*len(hashes))
	for _, h := range hashes {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return t.set(idKey('l', id), b)
}

// GetLinks returns the link hashes stored for page id (nil when none were).
func (t *Tx) GetLinks(id uint64) ([]uint64, error) {
	item, err := t.txn.Get(idKey('l', id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	err = item.Value(func(v []byte) error {
		if len(v)%8 != 0 {
			return fmt.Errorf("storage: link hashes of page %d: %d bytes", id, len(v))
		}
		out = make([]uint64, len(v)/8)
		for i := range out {
			out[i] = binary.LittleEndian.Uint64(v[8*i:])
		}
		return nil
	})
	return out, err
}

// Dependent is a URL that was not fetched because its counterpart (the same
// path on the page's original) was already known. If the counterpart fails,
// the dependent is queued after all.
type Dependent struct {
	ID    uint64 `json:"id"`
	URL   string `json:"url"`
	Depth int    `json:"depth"`
	Via   string `json:"via,omitempty"`
	Seen  bool   `json:"seen,omitempty"` // URL is in the seen-set with a mirror_skipped page record
	// Sample, when set, is the prefix pair key of a copy the near-duplicate
	// link monitor picked: fetched as its sample once the counterpart has
	// content.
	Sample string `json:"sample,omitempty"`
	key    []byte // the stored key, when read back (stores may hold older key forms)
}

// AddDependent records that d waits on counterpart's outcome.
func (t *Tx) AddDependent(counterpart string, d Dependent) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return t.set(depKey(counterpart, d), b)
}

// Dependents returns the dependents of counterpart, leaving them in place.
func (t *Tx) Dependents(counterpart string) ([]Dependent, error) {
	prefix := append([]byte("d/"+counterpart), 0)
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
	defer it.Close()
	var out []Dependent
	for it.Rewind(); it.Valid(); it.Next() {
		var d Dependent
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &d) }); err != nil {
			return nil, err
		}
		d.key = it.Item().KeyCopy(nil)
		out = append(out, d)
	}
	return out, nil
}

// DeleteDependent removes one dependent of counterpart (by the key it was read
// under, when it came from Dependents).
func (t *Tx) DeleteDependent(counterpart string, d Dependent) error {
	if d.key != nil {
		return t.delete(d.key)
	}
	return t.delete(depKey(counterpart, d))
}

// TakeDependents returns and removes the dependents of counterpart.
func (t *Tx) TakeDependents(counterpart string) ([]Dependent, error) {
	out, err := t.Dependents(counterpart)
	if err != nil {
		return nil, err
	}
	for _, d := range out {
		if err := t.delete(d.key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PutSkipped records a URL that is not fetched because it is a copy of a
// known page. Skipped URLs are not marked seen: if a unique page links to one
// later, it is queued and fetched after all (and DeleteSkipped drops this).
func (t *Tx) PutSkipped(p *Page) error {
	return t.set([]byte("k/"+p.URL), encodePage(p))
}

// GetSkipped returns the skip record of u, or nil if u has none.
func (t *Tx) GetSkipped(u string) (*Page, error) {
	p, err := t.pageAt([]byte("k/" + u))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	return p, err
}

// pageAt reads the page record stored under k (badger.ErrKeyNotFound if none).
func (t *Tx) pageAt(k []byte) (*Page, error) {
	item, err := t.txn.Get(k)
	if err != nil {
		return nil, err
	}
	var p Page
	err = item.Value(func(v []byte) error { return decodePage(v, &p) })
	return &p, err
}

// DeleteSkipped removes the skip record of u, if there is one.
func (t *Tx) DeleteSkipped(u string) error {
	k := []byte("k/" + u)
	if _, err := t.txn.Get(k); errors.Is(err, badger.ErrKeyNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return t.delete(k)
}

// GetPage reads a page record inside the transaction.
func (t *Tx) GetPage(id uint64) (*Page, error) {
	p, err := t.pageAt(idKey('p', id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	return p, err
}

// PutMeta stores a metadata value inside the transaction.
func (t *Tx) PutMeta(name string, v []byte) error { return t.set(metaKey(name), v) }

// PutEvidence stores a mirror-evidence or decision record.
func (t *Tx) PutEvidence(kind, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.set([]byte("x/"+kind+"/"+key), b)
}

// GetEvidence returns one evidence record, if present, leaving it.
func (t *Tx) GetEvidence(kind, key string) ([]byte, bool, error) {
	item, err := t.txn.Get([]byte("x/" + kind + "/" + key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil, err
}

// TakeEvidence returns and deletes one evidence record, if present.
func (t *Tx) TakeEvidence(kind, key string) ([]byte, bool, error) {
	k := []byte("x/" + kind + "/" + key)
	item, err := t.txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, false, err
	}
	return v, true, t.delete(k)
}

// ---- read side ----

// Page reads one page record.
func (d *DB) Page(id uint64) (*Page, error) {
	b, err := d.get(idKey('p', id))
	if err != nil {
		return nil, err
	}
	var p Page
	if err := decodePage(b, &p); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return &p, nil
}

// Text reads the visible text of page id.
func (d *DB) Text(id uint64) (string, error) {
	b, err := d.getValue(idKey('t', id))
	return string(b), err
}

// Raw reads the raw request and response of page id.
func (d *DB) Raw(id uint64) (request, response []byte, err error) {
	if request, err = d.getValue(idKey('w', id)); err != nil {
		return nil, nil, err
	}
	response, err = d.getValue(idKey('r', id))
	return request, response, err
}

// getValue reads a value stored by putValue (a raw request or response, a
// text). One that does not decode is unreadable, counted as damage like a
// value Badger could not read.
func (d *DB) getValue(key []byte) ([]byte, error) {
	b, err := d.get(key)
	if err != nil {
		return nil, err
	}
	out, err := decodeValue(b)
	if err != nil {
		d.damage.undecodable(kindOf(key))
		return nil, fmt.Errorf("%w: key %q: %w", ErrUnreadable, printableKey(key), err)
	}
	return out, nil
}

// FullScans returns how many scans over all page records (ForEachPage) and
// over all skip records (ForEachSkipped) this DB ran: tests assert that a
// crawl runs them a bounded number of times, not once per page (issue 29).
func (d *DB) FullScans() (pages, skipped int64) { return d.pageScans.Load(), d.skipScans.Load() }

// ForEachPage calls fn for every page record in id order.
func (d *DB) ForEachPage(fn func(*Page) error) error {
	d.pageScans.Add(1)
	return d.scan([]byte("p/"), func(_, v []byte) error {
		var p Page
		if err := decodePage(v, &p); err != nil {
			return err
		}
		return fn(&p)
	})
}

// ForEachSkipped calls fn for every skip record (class mirror_skipped).
func (d *DB) ForEachSkipped(fn func(*Page) error) error {
	d.skipScans.Add(1)
	return d.scan([]byte("k/"), func(_, v []byte) error {
		var p Page
		if err := decodePage(v, &p); err != nil {
			return err
		}
		return fn(&p)
	})
}

// ForEachSkippedUnder calls fn for every skip record whose URL starts with
// prefix, in URL order: a range read over the records' keys, not a scan of
// all of them.
func (d *DB) ForEachSkippedUnder(prefix string, fn func(*Page) error) error {
	return d.scan([]byte("k/"+prefix), func(_, v []byte) error {
		var p Page
		if err := decodePage(v, &p); err != nil {
			return err
		}
		return fn(&p)
	})
}

// ForEachSignature calls fn for every stored dedup signature in id order.
func (d *DB) ForEachSignature(fn func(id uint64, sig []byte) error) error {
	return d.scan([]byte("g/"), func(k, v []byte) error {
		return fn(binary.BigEndian.Uint64(k[2:]), v)
	})
}

// ForEachEvidence calls fn for every record of kind.
func (d *DB) ForEachEvidence(kind string, fn func(key string, v []byte) error) error {
	prefix := []byte("x/" + kind + "/")
	return d.scan(prefix, func(k, v []byte) error { return fn(string(k[len(prefix):]), v) })
}

// scan calls fn for every record under prefix. A record whose value cannot
// be read is skipped and counted (see Damage). Values are read on this
// goroutine, not prefetched by Badger's, so a panic over damaged data is
// recovered here.
func (d *DB) scan(prefix []byte, fn func(k, v []byte) error) error {
	return guard(func() error {
		return d.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				var unreadable bool
				err := item.Value(func(v []byte) error {
					if d.checkValue(item, v) != nil {
						unreadable = true
						return nil
					}
					return fn(item.Key(), v)
				})
				if err != nil && !unreadable {
					return err
				}
			}
			return nil
		})
	})
}

// ForEachSeenURL calls fn for every URL in the seen-set, reading the keys
// only (the seen filter's load on resume, crawl/seenfilter.go).
func (d *DB) ForEachSeenURL(fn func(u string) error) error {
	prefix := seenKey("")
	return guard(func() error {
		return d.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				if err := fn(string(it.Item().Key()[len(prefix):])); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// Seen reports whether u is in the seen-set.
func (d *DB) Seen(u string) (bool, error) {
	_, err := d.get(seenKey(u))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ---- frontier.Store ----

// QueueHosts implements frontier.Store.
func (d *DB) QueueHosts() ([]frontier.HostInfo, error) {
	var out []frontier.HostInfo
	err := d.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("q/")})
		defer it.Close()
		var cur *frontier.HostInfo
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			rest := k[2:]
			// host \x00 seq(8 bytes): the tail has a fixed size, and
			// seq itself may contain zero bytes.
			if len(rest) < 9 || rest[len(rest)-9] != 0 {
				continue
			}
			host := string(rest[:len(rest)-9])
			seq := binary.BigEndian.Uint64(rest[len(rest)-8:])
			if cur == nil || cur.Host != host {
				out = append(out, frontier.HostInfo{Host: host, MinSeq: seq})
				cur = &out[len(out)-1]
			}
			cur.Count++
			cur.MaxSeq = seq
		}
		return nil
	})
	return out, err
}

// LoadQueue implements frontier.Store.
func (d *DB) LoadQueue(host string, from uint64, n int) ([]frontier.Item, error) {
	var out []frontier.Item
	prefix := append([]byte("q/"+host), 0)
	err := d.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: n})
		defer it.Close()
		for it.Seek(queueKey(host, from)); it.Valid() && len(out) < n; it.Next() {
			k := it.Item().Key()
			var item frontier.Item
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &item) }); err != nil {
				return err
			}
			item.Host = host
			item.Seq = binary.BigEndian.Uint64(k[len(k)-8:])
			out = append(out, item)
		}
		return nil
	})
	return out, err
}

// ---- robots.txt entries ----

// GetRobots returns the stored robots.txt entry of a scheme+host key. The
// entry is opaque here; crawl/ adapts it to fetch.RobotsStore.
func (d *DB) GetRobots(host string) ([]byte, bool, error) {
	b, err := d.get([]byte("b/" + host))
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// PutRobots stores a robots.txt entry.
func (d *DB) PutRobots(host string, entry []byte) error {
	if err := d.checkSpace(); err != nil {
		return err
	}
	return d.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("b/"+host), entry) })
}

// ---- Badger logger adapter ----

type badgerLogger struct {
	l      *slog.Logger
	damage *damageLog
}

func (b badgerLogger) Errorf(f string, a ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(f, a...))
	if strings.HasPrefix(msg, "Unable to read") || strings.HasPrefix(msg, "Invalid read") || strings.HasPrefix(msg, "Key: ") {
		// A value Badger could not read: counted by the caller (see
		// checkValue); logged at debug level, the damage is reported once.
		b.damage.readFailed(msg)
		b.l.Debug(msg)
		return
	}
	b.l.Error(msg)
}
func (b badgerLogger) Warningf(f string, a ...any) { b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLogger) Infof(f string, a ...any)    { b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...))) }

// Page is the record of one URL the crawl dealt with, fetched or not.
type Page struct {
	ID          uint64 `json:"id"`
	URL         string `json:"url"`
	FinalURL    string `json:"final_url,omitempty"`
	Host        string `json:"host"`
	Depth       int    `json:"depth"`
	Via         string `json:"via,omitempty"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	Title       string `json:"title,omitempty"`
	Lang        string `json:"lang,omitempty"` // <html lang>, as declared
	// TextLang is the language identified from the visible text (ISO 639-1,
	// parse.DetectLanguage), "" when not reliably identified; TextLangConf is
	// the identifier's confidence.
	TextLang     string    `json:"text_lang,omitempty"`
	TextLangConf float64   `json:"text_lang_conf,omitempty"`
	Class        Class     `json:"class"`
	DuplicateOf  string    `json:"duplicate_of,omitempty"`
	OriginalID   uint64    `json:"original_id,omitempty"`
	Similarity   float64   `json:"similarity,omitempty"`
	Method       string    `json:"method,omitempty"`
	FetchedAt    time.Time `json:"fetched_at"`
	DurationMS   float64   `json:"duration_ms,omitempty"`
	Error        string    `json:"error,omitempty"`
	ErrorClass   string    `json:"error_class,omitempty"`
	RemoteIP     string    `json:"remote_ip,omitempty"`
	Redirects    []string  `json:"redirects,omitempty"`
	Canonical    string    `json:"canonical,omitempty"`
	NoIndex      bool      `json:"noindex,omitempty"`
	NoFollow     bool      `json:"nofollow,omitempty"`
	Words        int       `json:"words,omitempty"`
	Links        int       `json:"links,omitempty"`
	Bytes        int       `json:"bytes,omitempty"`
	SHA256       string    `json:"sha256,omitempty"`
	SHA1         string    `json:"sha1,omitempty"` // base32, as WARC-Payload-Digest
	Simhash      uint64    `json:"simhash,omitempty"`
	Verify       bool      `json:"verify,omitempty"` // fetched for a mirror decision's verification stream
	HasRaw       bool      `json:"has_raw,omitempty"`
	// Validators of the stored response (ETag, Last-Modified as received),
	// sent back by a recrawl (revisit.go).
	ETag         string   `json:"etag,omitempty"`
	LastModified string   `json:"last_modified,omitempty"`
	Revisit      *Revisit `json:"revisit,omitempty"` // the latest recrawl's visit; nil before any
}

// Class is a page record's class: what the crawl made of its URL.
type Class string

// Page classes.
const (
	ClassUnique           Class = "unique"
	ClassExact            Class = "exact_duplicate"
	ClassNear             Class = "near_duplicate"
	ClassMirrorSkipped    Class = "mirror_skipped"
	ClassRobotsDisallowed Class = "robots_disallowed"
	ClassNotHTML          Class = "not_html"
	ClassError            Class = "error"
)

// Classes lists every page class in report order.
var Classes = []Class{ClassUnique, ClassExact, ClassNear, ClassMirrorSkipped, ClassRobotsDisallowed, ClassNotHTML, ClassError}

// Duplicate reports whether the class records a fetched copy of an earlier
// page (exact or near duplicate).
func (c Class) Duplicate() bool { return c == ClassExact || c == ClassNear }

// Content reports whether the class records a fetched HTML page with text:
// unique, or a duplicate of one.
func (c Class) Content() bool { return c == ClassUnique || c.Duplicate() }

// Copy reports whether the class records a URL that stands in a cluster
// under an original: a duplicate, or a URL skipped as a mirror's copy.
func (c Class) Copy() bool { return c.Duplicate() || c == ClassMirrorSkipped }

// CostsRequest reports whether the record counts as a page request (the
// crawl's page count): a response was received, or the URL failed as an
// error. Records of URLs never requested (robots_disallowed, mirror_skipped)
// do not count.
func (p *Page) CostsRequest() bool { return p.Status != 0 || p.Class == ClassError }

// Failed reports whether the page cannot stand in for its copies: an error,
// a URL robots.txt refused, or a redirect (its content is elsewhere).
func (p *Page) Failed() bool {
	return p.Class == ClassError || p.Class == ClassRobotsDisallowed || (p.Status >= 300 && p.Status < 400)
}

// ServedURL is the URL that served the page: the end of its redirects, or
// the URL written with the session parameters the server insisted on, else
// the URL itself.
func (p *Page) ServedURL() string {
	if p.FinalURL != "" {
		return p.FinalURL
	}
	return p.URL
}

// CheckAndMark marks u seen under a new id (newID is called only then)
// unless it is seen, and returns u's id and whether this call marked it.
// Atomic: the transaction reads the mark it writes, so of two that mark one
// URL the later conflicts and, run again (Update), finds it marked.
func (t *Tx) CheckAndMark(u string, newID func() uint64) (uint64, bool, error) {
	id, seen, err := t.SeenID(u)
	if err != nil || seen {
		return id, false, err
	}
	id = newID()
	return id, true, t.MarkSeen(u, id)
}
