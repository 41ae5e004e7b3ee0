package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// ErrDamaged means files of the data dir are damaged (cut short, overwritten,
// missing): some records cannot be read. A *DamageError names what is lost.
var ErrDamaged = errors.New("store damaged")

// Damage is one damaged file of a data dir and what that costs.
type Damage struct {
	File string // base name: "MANIFEST", "000003.sst", "000001.vlog"
	What string // e.g. "cut short at byte 1234: the tail of the file is lost"
	// Fatal damage keeps the store from being opened at all: Badger would
	// panic on it, or repair it by deleting data.
	Fatal bool
}

// DamageError reports a store that cannot be opened (or resumed) because of
// damage. It unwraps to ErrDamaged.
type DamageError struct {
	Dir     string
	Damages []Damage
	Note    string // what the caller did about it, e.g. "nothing was read"
}

func (e *DamageError) Error() string {
	parts := make([]string, 0, len(e.Damages))
	for _, d := range e.Damages {
		parts = append(parts, d.File+": "+d.What)
	}
	msg := fmt.Sprintf("store damaged: data dir %s: %s", e.Dir, strings.Join(parts, "; "))
	if e.Note != "" {
		msg += "; " + e.Note
	}
	return msg
}

func (e *DamageError) Unwrap() error { return ErrDamaged }

// Check inspects the files of the data dir in dir without opening it with
// Badger and without writing to it: the MANIFEST (its checksum, an entry cut
// short, tables it lists that are missing), every table it lists (the index
// and every block's checksum), and every value-log entry's checksum. That
// reads every file once: tables are about a tenth of a crawl's size (8 GB at
// 100 M URLs), value logs the rest; a value log is read through a read-only
// memory map, not into the heap. A store of 690 MB (85 MB of tables) took
// 0.32 s with its files in the page cache (BenchmarkCheck, see
// BENCHMARKS.md); from disk it takes as long as reading the store once. It
// returns what it found damaged; an error only when the files cannot be
// read at all.
//
// Badger itself panics on a table cut short, deletes tables the MANIFEST does
// not list and truncates the last value log at its first bad entry (all when
// opening, even read-only for the tables), so the store is checked first.
//
// What a crash (kill -9, power kept) leaves is not damage, and Badger cleans
// it up on its next read-write open: table files the MANIFEST does not list
// yet (a memtable flush or a compaction writes its tables before recording
// them, and deletes the tables they replace only after) when the MANIFEST
// reads cleanly to its end (a crash cannot cut a MANIFEST record: Badger
// writes each with one write call) and the store was not closed cleanly (a
// write-ahead log is left), and a torn last write in the last value log (see
// tornWrite).
//
// Check reads every file; Open reads only what changed since its last check
// (see inspectAtOpen).
func Check(dir string) ([]Damage, error) {
	ds, _, err := inspect(dir, newCheckRun(nil))
	return ds, err
}

// residue is what a crash left in a data dir that Badger removes on its
// next read-write open (Check does not report it as damage).
type residue struct {
	tables []string // table files the MANIFEST does not list
	wals   []string // write-ahead logs (.mem) of memtables not flushed: a clean close removes them
	// empty are files a crash left empty: Badger creates a write-ahead
	// log or a value log, then sizes it; killed in between, the file has
	// 0 bytes and holds nothing, and Badger fails to open it (it would
	// size it and report it new), so Open removes them first.
	empty []string
}

func (r residue) unclean() bool { return len(r.tables) > 0 || len(r.wals) > 0 || len(r.empty) > 0 }

// inspect is Check, also returning what a crash left. It reads the tables
// and value logs that run.verify chooses (every one when run knows none).
func inspect(dir string, run *checkRun) ([]Damage, residue, error) {
	var out []Damage
	var res residue
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); errors.Is(err, os.ErrNotExist) {
		return nil, res, nil // a new store (checkDir refuses files without a MANIFEST)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, res, fmt.Errorf("cannot read data dir: %w", err)
	}
	onDisk := map[uint64]string{}
	var vlogs []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".sst"):
			if id, ok := table.ParseFileID(name); ok {
				onDisk[id] = name
			}
		case strings.HasSuffix(name, ".vlog"):
			vlogs = append(vlogs, name)
		case strings.HasSuffix(name, ".mem"):
			res.wals = append(res.wals, name)
			if info, err := e.Info(); err == nil && info.Size() == 0 {
				res.empty = append(res.empty, name)
			}
		}
	}
	if d, ok := checkKeyRegistry(dir); !ok {
		out = append(out, d)
	}
	listed, ds := checkManifest(dir)
	out = append(out, ds...)
	if listed == nil {
		return out, res, nil
	}
	var missing, orphan []string
	for id := range listed {
		if _, ok := onDisk[id]; !ok {
			missing = append(missing, table.IDToFilename(id))
		}
	}
	for id, name := range onDisk {
		if _, ok := listed[id]; !ok {
			orphan = append(orphan, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(orphan)
	if len(missing) > 0 {
		out = append(out, Damage{File: "MANIFEST", Fatal: true,
			What: fmt.Sprintf("lists %d table file(s) that are missing (%s): their records are lost", len(missing), strings.Join(missing, ", "))})
	}
	// Unlisted tables are a crash's only in a store that was not closed
	// cleanly: a clean close leaves no write-ahead log (.mem), and Badger
	// keeps one open from the moment it opens a store. In a cleanly closed
	// store they mean a MANIFEST cut short, even exactly between two records.
	if len(orphan) > 0 && (len(ds) > 0 || len(res.wals) == 0) {
		out = append(out, Damage{File: "MANIFEST", Fatal: true,
			What: fmt.Sprintf("does not list %d of the %d table files (%s): the MANIFEST is damaged or cut short, and opening the store would delete them",
				len(orphan), len(onDisk), strings.Join(orphan, ", "))})
	} else {
		res.tables = orphan // a crash's: see Check
	}
	ids := make([]uint64, 0, len(listed))
	for id := range listed {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		name, ok := onDisk[id]
		if !ok {
			continue
		}
		tm := listed[id]
		if what := run.verify(dir, name, func(path string) string { return checkTable(path, tm) }); what != "" {
			out = append(out, Damage{File: name, What: what, Fatal: true})
		}
	}
	sort.Strings(vlogs)
	if len(vlogs) == 0 {
		// Badger keeps its last value log, even an empty one.
		out = append(out, Damage{File: "value log", What: "no .vlog file: every value above 4 KiB (most texts and raw responses) is lost"})
	}
	if n := len(vlogs); n > 0 {
		if st, err := os.Stat(filepath.Join(dir, vlogs[n-1])); err == nil && st.Size() == 0 {
			res.empty = append(res.empty, vlogs[n-1]) // see residue
			vlogs = vlogs[:n-1]
		}
	}
	for i, name := range vlogs {
		var what string
		if i == len(vlogs)-1 {
			// The last value log is appended to: always read.
			run.read = append(run.read, name)
			what = checkVlog(filepath.Join(dir, name), true)
		} else {
			what = run.verify(dir, name, func(path string) string { return checkVlog(path, false) })
		}
		if what != "" {
			out = append(out, Damage{File: name, What: what})
		}
	}
	return out, res, nil
}

// keyRegistrySanity is what Badger's KEYREGISTRY holds after its 16-byte IV (badger's sanityText,
// in clear in a store without encryption). The crawler never encrypts, so the file holds no key
// after it: it is 28 bytes.
const keyRegistrySanity = "Hello Badger"

// checkKeyRegistry checks Badger's KEYREGISTRY, which Badger reads before anything else and
// refuses with a bare "Encryption key mismatch" or "Error while reading sanity text" when it is
// damaged. A missing one is no damage: Badger writes a new one (or, read-only, does without).
func checkKeyRegistry(dir string) (Damage, bool) {
	b, err := os.ReadFile(filepath.Join(dir, badger.KeyRegistryFileName))
	if errors.Is(err, os.ErrNotExist) {
		return Damage{}, true
	}
	const size = 16 + len(keyRegistrySanity)
	var what string
	switch {
	case err != nil:
		what = "cannot be read: " + err.Error()
	case len(b) < size:
		what = fmt.Sprintf("cut short (%d bytes, want %d)", len(b), size)
	case string(b[16:size]) != keyRegistrySanity:
		what = fmt.Sprintf("overwritten (bytes 16-%d are not Badger's %q)", size, keyRegistrySanity)
	case len(b) > size:
		what = fmt.Sprintf("has %d bytes after its end (%d bytes, want %d)", len(b)-size, len(b), size)
	default:
		return Damage{}, true
	}
	return Damage{File: badger.KeyRegistryFileName, Fatal: true, What: what +
		": Badger cannot open the store; the crawler does not encrypt its store, so this file holds no key and no record: " +
		"remove it (Badger writes a new one) and run again"}, false
}

// manifestHeaderSize is the MANIFEST's magic and version, before its records.
const manifestHeaderSize = 8

// checkManifest replays the MANIFEST read-only and returns the tables it
// lists (nil when it cannot be read) and its damage (none when it reads
// cleanly to its end).
func checkManifest(dir string) (map[uint64]badger.TableManifest, []Damage) {
	path := filepath.Join(dir, "MANIFEST")
	f, err := os.Open(path)
	if err != nil {
		return nil, []Damage{{File: "MANIFEST", What: fmt.Sprintf("cannot be read: %v", err), Fatal: true}}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, []Damage{{File: "MANIFEST", What: fmt.Sprintf("cannot be read: %v", err), Fatal: true}}
	}
	var m badger.Manifest
	var end int64
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		m, end, err = badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
		return err
	}()
	if err != nil {
		return nil, []Damage{{File: "MANIFEST", Fatal: true,
			What: fmt.Sprintf("unreadable (%s): which tables hold the records is unknown, nothing can be read", oneLine(err.Error()))}}
	}
	var out []Damage
	if end <= manifestHeaderSize {
		// Badger never writes a MANIFEST without a record: a new one, and
		// each rewrite, starts with the list of its tables.
		return nil, []Damage{{File: "MANIFEST", Fatal: true,
			What: fmt.Sprintf("cut short to %d bytes, no record after its header: which tables hold the records is unknown, nothing can be read", st.Size())}}
	}
	if end < st.Size() {
		out = append(out, Damage{File: "MANIFEST", Fatal: true,
			What: fmt.Sprintf("cut short or overwritten after byte %d of %d: the table changes recorded after it are lost", end, st.Size())})
	}
	return m.Tables, out
}

// checkTable opens one table read-only as Badger would, with panics turned
// into a description of the damage ("" when the table is sound).
func checkTable(path string, tm badger.TableManifest) (what string) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return fmt.Sprintf("cannot be read: %s", oneLine(err.Error()))
	}
	defer func() {
		_ = mf.Close(-1)
		if r := recover(); r != nil {
			what = fmt.Sprintf("cut short or overwritten (%d bytes, unparsable): its records cannot be read", len(mf.Data))
		}
	}()
	if len(mf.Data) < 8 {
		return fmt.Sprintf("cut short (%d bytes): its records cannot be read", len(mf.Data))
	}
	d := badger.DefaultOptions("")
	t, err := table.OpenTable(mf, table.Options{
		ChkMode:            options.OnTableRead,
		BlockSize:          d.BlockSize,
		BloomFalsePositive: d.BloomFalsePositive,
		Compression:        tm.Compression,
	})
	if err != nil {
		return fmt.Sprintf("damaged (%s): its records cannot be read", oneLine(err.Error()))
	}
	_ = t // not DecrRef: at zero references a Table deletes its file
	return ""
}

// checkVlog verifies the checksum of every entry of a value-log file, read
// through a read-only memory map (a crashed store's last value log is
// preallocated to twice the value log file size, up to 4 GiB). last is the
// newest value log, the only one Badger writes to.
func checkVlog(path string, last bool) string {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	if st.Size() < vlogHeaderSize {
		return fmt.Sprintf("cut short (%d bytes): every value in it is lost", st.Size())
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return fmt.Sprintf("cannot be read: %s", oneLine(err.Error()))
	}
	defer mf.Close(-1)
	return scanVlog(mf.Data, last)
}

const vlogHeaderSize = 20 // Badger's vlogHeaderSize: key id and IV

// scanVlog checks the entries of the value-log file b (see checkVlog).
func scanVlog(b []byte, last bool) string {
	// A crash leaves the last value log at its preallocated size, twice
	// its file size (a whole number of MiB, see valueLogFileSize), zeros
	// after the last write; a clean close cuts it to its end.
	preallocated := len(b) >= 2*DefaultValueLogFileSize && len(b)%(2<<20) == 0
	bad := 0
	off := vlogHeaderSize
	for off < len(b) {
		// An entry's key length (at least 8: keys end in a version) is
		// never a zero byte, so a zero there may start the zero tail.
		if (off+2 >= len(b) || b[off+2] == 0) && allZero(b[off:]) {
			break
		}
		end, ok := entryEnd(b, off)
		if ok && end <= len(b) && entrySumOK(b, off, end) {
			off = end
			continue
		}
		if last && preallocated && tornWrite(b, off) {
			// Badger drops it on its next read-write open; nothing
			// committed is lost.
			off = len(b)
			break
		}
		switch {
		case !ok:
			return damagedFrom(off, len(b), bad)
		case end > len(b):
			return fmt.Sprintf("cut short at byte %d (an entry at byte %d needs %d)%s: the values after byte %d are lost",
				len(b), off, end, plusBad(bad), off)
		}
		bad++
		off = end
	}
	if off < len(b) && !preallocated {
		return fmt.Sprintf("zeroed from byte %d to its end (%d bytes)%s: the values there are lost", off, len(b), plusBad(bad))
	}
	if bad > 0 {
		return fmt.Sprintf("%d value(s) fail their checksum: their values are lost", bad)
	}
	return ""
}

// entryEnd parses the header of the value-log entry at off (meta, user meta,
// uvarint key length, value length and expiry) and returns where the entry
// ends, after its checksum; ok is false when the header is not one Badger
// writes.
func entryEnd(b []byte, off int) (end int, ok bool) {
	h := off + 2
	if h >= len(b) {
		return 0, false
	}
	klen, n1 := binary.Uvarint(b[h:])
	if n1 <= 0 {
		return 0, false
	}
	vlen, n2 := binary.Uvarint(b[h+n1:])
	if n2 <= 0 {
		return 0, false
	}
	_, n3 := binary.Uvarint(b[h+n1+n2:])
	if n3 <= 0 || klen < 8 || klen > 1<<16 || vlen > uint64(len(b)) { // keys end in an 8-byte version
		return 0, false
	}
	return h + n1 + n2 + n3 + int(klen) + int(vlen) + crc32.Size, true
}

func entrySumOK(b []byte, off, end int) bool {
	return crc32.Checksum(b[off:end-crc32.Size], castagnoli) == binary.BigEndian.Uint32(b[end-crc32.Size:end])
}

// tornWrite reports whether the unreadable entry at off of a last value log
// left preallocated by a crash is a write the crash cut in the middle: Badger
// copies each entry into the memory-mapped file with one copy, and Go's
// memmove may store the end of a buffer before its start, so a kill
// mid-copy leaves an entry whose header may still be zero while its tail is
// written, then zeros to the end of the file. Such an entry was never
// acknowledged nor referenced (Badger writes the value log before the
// memtable's write-ahead log). It is one when the bytes from off to the last
// non-zero byte fit in one entry (less than the value log file size, half
// the preallocated file) and no sound entry starts among them.
func tornWrite(b []byte, off int) bool {
	last := lastNonZero(b)
	if last < off || last-off >= len(b)/2 {
		return false
	}
	for p := off + 1; p+2 <= last; p++ {
		// The entries this store writes have neither meta nor user
		// meta bits in the value log (Badger clears its transaction
		// bits there), so only such a start is tried.
		if b[p] != 0 || b[p+1] != 0 {
			continue
		}
		if end, ok := entryEnd(b, p); ok && end <= len(b) && entrySumOK(b, p, end) {
			return false
		}
	}
	return true
}

// lastNonZero returns the index of the last non-zero byte of b, -1 if none.
func lastNonZero(b []byte) int {
	end := len(b)
	for end > 0 {
		n := min(end, len(zeros))
		if !bytes.Equal(b[end-n:end], zeros[:n]) {
			for i := end - 1; ; i-- {
				if b[i] != 0 {
					return i
				}
			}
		}
		end -= n
	}
	return -1
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func damagedFrom(off, size, bad int) string {
	return fmt.Sprintf("damaged at byte %d of %d (an entry header is unreadable)%s: values from there on may be lost", off, size, plusBad(bad))
}

func plusBad(bad int) string {
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf(", and %d value(s) before it fail their checksum", bad)
}

func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), 4096)
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

var zeros [4096]byte

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// vlogName is the file name of value-log file fid.
func vlogName(fid uint64) string { return fmt.Sprintf("%06d.vlog", fid) }

// parseFid finds "Fid:N" in a Badger error message about a value pointer.
func parseFid(msg string) (uint64, bool) {
	i := strings.Index(msg, "Fid:")
	if i < 0 {
		return 0, false
	}
	s := msg[i+4:]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, err := strconv.ParseUint(s[:j], 10, 64)
	return n, err == nil
}
