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
// short, tables it lists that are missing and tables it does not list), every
// table it lists (the index and every block's checksum), and every
// value-log entry's checksum. That reads every file once: tables are about a
// tenth of a crawl's size (8 GB at 100 M URLs), value logs the rest. It returns what it found damaged; an error
// only when the files cannot be read at all.
//
// Badger itself panics on a table cut short, deletes tables the MANIFEST does
// not list and truncates the last value log at its first bad entry (all when
// opening, even read-only for the tables), so the store is checked first.
func Check(dir string) ([]Damage, error) {
	var out []Damage
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); errors.Is(err, os.ErrNotExist) {
		return nil, nil // a new store (checkDir refuses files without a MANIFEST)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read data dir: %w", err)
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
		}
	}
	listed, ds := checkManifest(dir)
	out = append(out, ds...)
	if listed == nil {
		return out, nil
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
	if len(orphan) > 0 {
		out = append(out, Damage{File: "MANIFEST", Fatal: true,
			What: fmt.Sprintf("does not list %d of the %d table files (%s): the MANIFEST is damaged or cut short, and opening the store would delete them",
				len(orphan), len(onDisk), strings.Join(orphan, ", "))})
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
		if what := checkTable(filepath.Join(dir, name), listed[id]); what != "" {
			out = append(out, Damage{File: name, What: what, Fatal: true})
		}
	}
	sort.Strings(vlogs)
	if len(vlogs) == 0 {
		// Badger keeps its last value log, even an empty one.
		out = append(out, Damage{File: "value log", What: "no .vlog file: every value above 4 KiB (most texts and raw responses) is lost"})
	}
	for _, name := range vlogs {
		if what := checkVlog(filepath.Join(dir, name)); what != "" {
			out = append(out, Damage{File: name, What: what})
		}
	}
	return out, nil
}

// checkManifest replays the MANIFEST read-only and returns the tables it
// lists (nil when it cannot be read).
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

// checkVlog verifies the checksum of every entry of a value-log file. A bad
// entry followed only by zero bytes is a write torn by a crash (Badger drops
// it, nothing committed is lost) and is not reported.
func checkVlog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	const headerSize = 20 // vlogHeaderSize: key id and IV
	if len(b) < headerSize {
		return fmt.Sprintf("cut short (%d bytes): every value in it is lost", len(b))
	}
	bad, lastBad := 0, -1
	off := headerSize
	for off < len(b) {
		if allZero(b[off:]) {
			break
		}
		h := off + 2
		klen, n1 := binary.Uvarint(b[h:])
		if n1 <= 0 {
			return damagedFrom(off, len(b), bad)
		}
		vlen, n2 := binary.Uvarint(b[h+n1:])
		if n2 <= 0 {
			return damagedFrom(off, len(b), bad)
		}
		_, n3 := binary.Uvarint(b[h+n1+n2:])
		if n3 <= 0 || klen < 8 || klen > 1<<16 || vlen > uint64(len(b)) { // keys end in an 8-byte version
			return damagedFrom(off, len(b), bad)
		}
		end := h + n1 + n2 + n3 + int(klen) + int(vlen) + crc32.Size
		if end > len(b) {
			return fmt.Sprintf("cut short at byte %d (an entry at byte %d needs %d)%s: the values after byte %d are lost",
				len(b), off, end, plusBad(bad), off)
		}
		sum := crc32.Checksum(b[off:end-crc32.Size], castagnoli)
		if sum != binary.BigEndian.Uint32(b[end-crc32.Size:end]) {
			bad++
			lastBad = off
		}
		off = end
	}
	// A crash leaves the last value log at its preallocated size, twice
	// its file size (a whole number of MiB, see valueLogFileSize), zeros
	// after the last write; a clean close cuts it to its end.
	preallocated := len(b) >= 2*DefaultValueLogFileSize && len(b)%(2<<20) == 0
	if off < len(b) && !preallocated {
		return fmt.Sprintf("zeroed from byte %d to its end (%d bytes)%s: the values there are lost", off, len(b), plusBad(bad))
	}
	if bad == 1 && lastBad >= 0 && off < len(b) && lastEntryBefore(b, lastBad, off) {
		return "" // a torn last write, followed by the zeroed preallocated tail
	}
	if bad > 0 {
		return fmt.Sprintf("%d value(s) fail their checksum: their values are lost", bad)
	}
	return ""
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// lastEntryBefore reports whether the entry at start is the last one before
// the zero tail at end.
func lastEntryBefore(b []byte, start, end int) bool { return end > start && allZero(b[end:]) }

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
