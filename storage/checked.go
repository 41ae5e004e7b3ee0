package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// checkedFile is the sidecar in which Open records the files its check read
// whole and found sound (see inspectAtOpen). Badger ignores files it does not
// know.
const checkedFile = "CHECKED"

// checkedHeader is the sidecar's first line: its format.
const checkedHeader = "horseshoe checked files v1"

// fileStamp identifies the content of a file cheaply: the same name with the
// same stamp is the file that was verified. A file rewritten (a copy, a
// restore, a table id Badger reuses after a deletion) gets a new inode or
// mtime, and mostly a new size or tail. Bits flipped in place, on disk, keep
// all four: Check does not see them again, Badger's checksums do when the
// block or value is read (see README, "damaged store").
type fileStamp struct {
	size  int64
	mtime int64  // nanoseconds
	ino   uint64 // 0 where the system has none
	tail  uint32 // CRC-32C of the last 4 KiB: a table's index checksum and size, a value log's last entries
}

// tailSize is how much of a file's end its stamp covers: one page, which
// Badger reads anyway when it opens a table (its index is at the end).
const tailSize = 4 << 10

func stampOf(path string) (fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileStamp{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fileStamp{}, err
	}
	buf := make([]byte, min(st.Size(), tailSize))
	if _, err := f.ReadAt(buf, st.Size()-int64(len(buf))); err != nil && !errors.Is(err, io.EOF) {
		return fileStamp{}, err
	}
	return fileStamp{size: st.Size(), mtime: st.ModTime().UnixNano(), ino: inode(st), tail: crc32.Checksum(buf, castagnoli)}, nil
}

// checkRun is the choice of files one check reads, and what it found.
type checkRun struct {
	known map[string]fileStamp // files a check read whole and found sound, as they were then
	read  []string             // the tables and value logs this check read whole
	sound map[string]fileStamp // the files verify found sound (or known, unchanged)
}

func newCheckRun(known map[string]fileStamp) *checkRun {
	return &checkRun{known: known, sound: map[string]fileStamp{}}
}

// verify runs check (one of the per-file checks of Check) on the file name of
// dir, which Badger never changes once written (a table, a value log but the
// last), unless an earlier check found it sound with the same stamp. It
// returns check's answer, "" for a file skipped.
func (r *checkRun) verify(dir, name string, check func(path string) string) string {
	path := filepath.Join(dir, name)
	st, err := stampOf(path)
	if k, ok := r.known[name]; ok && err == nil && k == st {
		r.sound[name] = st
		return ""
	}
	r.read = append(r.read, name)
	what := check(path)
	if what == "" && err == nil {
		r.sound[name] = st
	}
	return what
}

// checkedHook, when set (by tests), is called with the files each check at
// Open read whole.
var checkedHook func(dir string, read []string)

// inspectAtOpen is inspect as Open runs it, at a cost that does not grow with
// the store: Badger writes a table whole and syncs it before the MANIFEST
// lists it (table.CreateTable syncs its file, levels.go syncs the dir before
// manifest.addChanges), and it never writes to a value log again once it has
// moved to the next (a read-write open starts a new one). So a table or an
// older value log that a check read whole and found sound, and that still has
// the same stamp, is not read again. The sidecar CHECKED records them; it is
// written (to a temporary file, then renamed) after a check that found no
// damage, by a read-write open only (a read-only one writes nothing). The
// KEYREGISTRY, the MANIFEST, the last value log (appended to; a crash tears
// its end) and the crash's residue are checked every time. Without a readable
// sidecar (an older store, a copy: new inodes) every file is read, as Check
// does.
func inspectAtOpen(dir string, readOnly bool) ([]Damage, residue, error) {
	run := newCheckRun(readChecked(dir))
	ds, res, err := inspect(dir, run)
	if checkedHook != nil {
		checkedHook(dir, run.read)
	}
	if err != nil || len(ds) > 0 || readOnly {
		return ds, res, err
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
		// Best effort: without it, the next open reads every file.
		_ = writeChecked(dir, run.sound)
	}
	return ds, res, nil
}

// readChecked returns the files the sidecar of dir records, nil when it is
// missing or unreadable (then every file is read).
func readChecked(dir string) map[string]fileStamp {
	b, err := os.ReadFile(filepath.Join(dir, checkedFile))
	if err != nil {
		return nil
	}
	// The last line is the CRC-32C of the lines before it: a sidecar cut
	// short or changed is not trusted.
	i := bytes.LastIndex(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if i < 0 {
		return nil
	}
	body, last := b[:i+1], strings.TrimSpace(string(b[i+1:]))
	sum, err := strconv.ParseUint(strings.TrimPrefix(last, "crc "), 16, 32)
	if err != nil || !strings.HasPrefix(last, "crc ") || uint32(sum) != crc32.Checksum(body, castagnoli) {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	if !sc.Scan() || sc.Text() != checkedHeader {
		return nil
	}
	out := map[string]fileStamp{}
	for sc.Scan() {
		var name string
		var s fileStamp
		if n, err := fmt.Sscanf(sc.Text(), "%s %d %d %d %x", &name, &s.size, &s.mtime, &s.ino, &s.tail); n != 5 || err != nil {
			return nil
		}
		out[name] = s
	}
	return out
}

// writeChecked writes the sidecar of dir atomically: a crash leaves the old
// one or the new one (or a stray CHECKED.tmp, rewritten next time).
func writeChecked(dir string, files map[string]fileStamp) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString(checkedHeader + "\n")
	for _, name := range names {
		s := files[name]
		fmt.Fprintf(&b, "%s %d %d %d %08x\n", name, s.size, s.mtime, s.ino, s.tail)
	}
	fmt.Fprintf(&b, "crc %08x\n", crc32.Checksum(b.Bytes(), castagnoli))
	tmp := filepath.Join(dir, checkedFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, checkedFile))
}
