package hostile

import (
	"bytes"
	binenc "encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// StoreDamage is one way a crawl's data dir (a Badger store) gets damaged:
// a disk, a copy or a person cuts a file short, flips bits or loses a file.
type StoreDamage struct {
	Name string // identifier, as passed to DamageStore
	What string
}

// StoreDamages lists the damages DamageStore knows, in a fixed order.
func StoreDamages() []StoreDamage {
	return []StoreDamage{
		{"truncate-sst", "cut a table (.sst) short at a random point"},
		{"truncate-sst-tiny", "cut a table (.sst) to a few bytes"},
		{"zero-sst-block", "overwrite 4 KiB inside a table (.sst) with zeros"},
		{"delete-sst", "delete a table (.sst) the MANIFEST lists"},
		{"truncate-manifest", "cut the MANIFEST short at a random point inside one of its records"},
		{"truncate-manifest-header", "cut the MANIFEST to its 8-byte header (it then lists no table)"},
		{"flip-manifest", "flip bits in the MANIFEST"},
		{"truncate-vlog", "cut a value log (.vlog) short at a random point inside a value (a cut between two entries cannot be told from a shorter log)"},
		{"flip-vlog", "flip one bit inside a value of a value log (.vlog) entry (checksums of the others stay good)"},
		{"flip-vlog-many", "flip one bit inside several values of a value log"},
		{"zero-vlog-block", "overwrite 4 KiB inside a value log (.vlog) with zeros, not at its end"},
		{"delete-vlog", "delete a value log (.vlog)"},
		{"truncate-keyregistry", "cut Badger's KEYREGISTRY short (inside its IV or its sanity text)"},
		{"flip-keyregistry", "flip a bit of the sanity text of Badger's KEYREGISTRY"},
		{"append-keyregistry", "append bytes to Badger's KEYREGISTRY"},
	}
}

// DamageStore damages the data dir in dir in the named way (see
// StoreDamages), choosing the file and the offsets with r, so that the same
// case can be run again with other numbers. It returns what it did, one line.
// A damage that needs a file the store lacks (a value log when every value
// is small) returns an error wrapping os.ErrNotExist.
func DamageStore(dir, name string, r *rand.Rand) (string, error) {
	pick := func(ext string, largest bool) (string, []byte, error) {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
		var files []string
		for _, f := range m {
			if st, err := os.Stat(f); err == nil && st.Size() > 64 {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			return "", nil, fmt.Errorf("no %s file of more than 64 bytes in %s: %w", ext, dir, os.ErrNotExist)
		}
		sort.Strings(files)
		f := files[r.IntN(len(files))]
		if largest {
			sort.Slice(files, func(i, j int) bool { return size(files[i]) > size(files[j]) })
			f = files[0]
		}
		b, err := os.ReadFile(f)
		return f, b, err
	}
	base := filepath.Base
	switch name {
	case "truncate-sst", "truncate-sst-tiny":
		f, b, err := pick(".sst", false)
		if err != nil {
			return "", err
		}
		at := 1 + r.IntN(len(b)-1)
		if name == "truncate-sst-tiny" {
			at = r.IntN(8)
		}
		return fmt.Sprintf("cut %s from %d to %d bytes", base(f), len(b), at), os.Truncate(f, int64(at))
	case "zero-sst-block":
		f, b, err := pick(".sst", true)
		if err != nil {
			return "", err
		}
		at := r.IntN(max(1, len(b)/2)) // the blocks come first, the index last
		n := min(4096, len(b)-at)
		copy(b[at:at+n], make([]byte, n))
		return fmt.Sprintf("zeroed bytes %d-%d of %s", at, at+n, base(f)), os.WriteFile(f, b, 0o644)
	case "delete-sst":
		f, _, err := pick(".sst", false)
		if err != nil {
			return "", err
		}
		return "deleted " + base(f), os.Remove(f)
	case "truncate-manifest", "truncate-manifest-header":
		f := filepath.Join(dir, "MANIFEST")
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		at := 8
		if name == "truncate-manifest" {
			// Inside a record: a cut between two records is what a
			// crash leaves before Badger records its next tables (the
			// store then opens, deleting them as a crash's residue).
			recs := manifestRecords(b)
			if len(recs) == 0 {
				return "", fmt.Errorf("MANIFEST has no record to cut: %w", os.ErrNotExist)
			}
			rec := recs[r.IntN(len(recs))]
			at = rec[0] + 1 + r.IntN(rec[1]-rec[0]-1)
		}
		return fmt.Sprintf("cut MANIFEST from %d to %d bytes", len(b), at), os.Truncate(f, int64(at))
	case "flip-manifest":
		f := filepath.Join(dir, "MANIFEST")
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		at := 8 + r.IntN(len(b)-8)
		b[at] ^= 1 << r.IntN(8)
		return fmt.Sprintf("flipped a bit of MANIFEST byte %d", at), os.WriteFile(f, b, 0o644)
	case "truncate-vlog":
		f, b, err := pick(".vlog", true)
		if err != nil {
			return "", err
		}
		vals := vlogValues(b)
		if len(vals) == 0 {
			return "", fmt.Errorf("%s holds no value: %w", base(f), os.ErrNotExist)
		}
		v := vals[r.IntN(len(vals))]
		at := v[0] + 1 + r.IntN(v[1]-v[0]-1)
		return fmt.Sprintf("cut %s from %d to %d bytes", base(f), len(b), at), os.Truncate(f, int64(at))
	case "flip-vlog", "flip-vlog-many":
		f, b, err := pick(".vlog", true)
		if err != nil {
			return "", err
		}
		vals := vlogValues(b)
		if len(vals) == 0 {
			return "", fmt.Errorf("%s holds no value: %w", base(f), os.ErrNotExist)
		}
		n := 1
		if name == "flip-vlog-many" {
			n = 1 + r.IntN(min(len(vals), 8))
		}
		var at []string
		for _, i := range r.Perm(len(vals))[:n] {
			v := vals[i]
			off := v[0] + r.IntN(v[1]-v[0])
			b[off] ^= 1 << r.IntN(8)
			at = append(at, fmt.Sprint(off))
		}
		return fmt.Sprintf("flipped a bit in %d value(s) of %s (bytes %s)", n, base(f), strings.Join(at, ", ")), os.WriteFile(f, b, 0o644)
	case "zero-vlog-block":
		f, b, err := pick(".vlog", true)
		if err != nil {
			return "", err
		}
		if len(b) < 20+4096+64 {
			return "", fmt.Errorf("%s is too small to zero a block inside: %w", base(f), os.ErrNotExist)
		}
		at := 20 + r.IntN(len(b)-20-4096-64)
		n := 4096
		copy(b[at:at+n], make([]byte, n))
		return fmt.Sprintf("zeroed bytes %d-%d of %s", at, at+n, base(f)), os.WriteFile(f, b, 0o644)
	case "delete-vlog":
		f, _, err := pick(".vlog", true)
		if err != nil {
			return "", err
		}
		return "deleted " + base(f), os.Remove(f)
	case "truncate-keyregistry", "flip-keyregistry", "append-keyregistry":
		f := filepath.Join(dir, "KEYREGISTRY")
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		switch name {
		case "truncate-keyregistry":
			at := r.IntN(len(b))
			return fmt.Sprintf("cut KEYREGISTRY from %d to %d bytes", len(b), at), os.Truncate(f, int64(at))
		case "flip-keyregistry":
			at := 16 + r.IntN(max(1, len(b)-16)) // after the random IV
			b[at] ^= 1 << r.IntN(8)
			return fmt.Sprintf("flipped a bit of KEYREGISTRY byte %d", at), os.WriteFile(f, b, 0o644)
		}
		n := 1 + r.IntN(64)
		extra := make([]byte, n)
		for i := range extra {
			extra[i] = byte(r.IntN(256))
		}
		return fmt.Sprintf("appended %d bytes to KEYREGISTRY", n), os.WriteFile(f, append(b, extra...), 0o644)
	}
	return "", fmt.Errorf("unknown store damage %q", name)
}

func size(f string) int64 {
	st, err := os.Stat(f)
	if err != nil {
		return 0
	}
	return st.Size()
}

// manifestRecords returns the [start, end) byte ranges of the records of a
// Badger MANIFEST (an 8-byte header, then records: 4-byte length, 4-byte
// CRC-32C, a change set of that length).
func manifestRecords(b []byte) [][2]int {
	var out [][2]int
	for off := 8; off+8 <= len(b); {
		end := off + 8 + int(binenc.BigEndian.Uint32(b[off:]))
		if end > len(b) {
			break
		}
		out = append(out, [2]int{off, end})
		off = end
	}
	return out
}

// vlogValues returns the [start, end) byte ranges of the values of the
// well-formed entries of a Badger value-log file (a 20-byte file header, then
// entries: meta, user meta, uvarint key length, value length and expiry,
// key, value, CRC-32C of all that).
func vlogValues(b []byte) [][2]int {
	var out [][2]int
	tab := crc32.MakeTable(crc32.Castagnoli)
	off := 20
	for off+2 < len(b) {
		h := off + 2
		klen, n1 := binenc.Uvarint(b[h:])
		if n1 <= 0 {
			break
		}
		vlen, n2 := binenc.Uvarint(b[h+n1:])
		if n2 <= 0 {
			break
		}
		_, n3 := binenc.Uvarint(b[h+n1+n2:])
		if n3 <= 0 || klen == 0 || klen > 1<<16 {
			break
		}
		start := h + n1 + n2 + n3 + int(klen)
		end := start + int(vlen)
		if end+4 > len(b) || crc32.Checksum(b[off:end], tab) != binenc.BigEndian.Uint32(b[end:end+4]) {
			break
		}
		if vlen > 0 && !bytes.HasPrefix(b[h+n1+n2+n3:], []byte("!badger!")) {
			out = append(out, [2]int{start, end})
		}
		off = end + 4
	}
	return out
}
