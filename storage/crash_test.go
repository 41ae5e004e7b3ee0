//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv names the data dir a re-executed test binary writes to
// until it is killed (see TestKillNineChild).
const crashChildEnv = "HORSESHOE_STORAGE_CRASH_CHILD"

// TestKillNineChild is not a test: run by TestKillNineLeavesAHealthyStore
// with crashChildEnv set, it writes pages to the store until it is killed,
// printing each page id once its Update has returned.
func TestKillNineChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("run by TestKillNineLeavesAHealthyStore")
	}
	db, err := Open(dir, Options{MinFreeBytes: -1})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	for {
		var id uint64
		err := db.Update(func(tx *Tx) error {
			id = tx.NewID()
			if err := tx.PutPage(&Page{ID: id, URL: fmt.Sprintf("http://a/%d", id), Host: "a", Status: 200, Class: ClassUnique, HasRaw: true}); err != nil {
				return err
			}
			if err := tx.PutText(id, crashText(id)); err != nil {
				return err
			}
			return tx.PutRaw(id, []byte("GET / HTTP/1.1\r\n\r\n"), []byte(crashRaw(id)))
		})
		if err != nil {
			fmt.Println("update:", err)
			os.Exit(3)
		}
		// One write per line, unbuffered: the parent sees only whole
		// lines of pages committed (a pipe write this short is atomic).
		if _, err := os.Stdout.WriteString(strconv.FormatUint(id, 10) + "\n"); err != nil {
			os.Exit(3)
		}
	}
}

// runCrashChild starts a child writing to dir, kills it with SIGKILL after
// d and returns the ids whose Update returned.
func runCrashChild(t *testing.T, dir string, d time.Duration) []uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillNineChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, _ = io.ReadAll(stdout)
	}()
	timer := time.AfterFunc(d, func() { _ = cmd.Process.Kill() })
	<-done
	timer.Stop()
	_ = cmd.Wait()
	// A line the kill cut (no newline) may be a prefix of an id: it is
	// not one committed.
	lines := strings.Split(string(out), "\n")
	lines = lines[:len(lines)-1]
	var ids []uint64
	for i, l := range lines {
		id, err := strconv.ParseUint(l, 10, 64)
		if err != nil {
			t.Fatalf("child: %s", strings.Join(lines[i:], " | "))
		}
		ids = append(ids, id)
	}
	return ids
}

// TestKillNineLeavesAHealthyStore kills a process writing pages with SIGKILL
// at random moments, several times over one store, which grows past memtable
// flushes and compactions. After each kill the store is not damaged (Check
// finds nothing), opens read-only and read-write (in turns, which of the
// two sees the store as the crash left it), and holds every page whose
// Update returned before the kill, its text and response as written.
func TestKillNineLeavesAHealthyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "data")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	var committed []uint64
	for i := range 8 {
		d := time.Duration(700+r.IntN(1300)) * time.Millisecond
		ids := runCrashChild(t, dir, d)
		committed = append(committed, ids...)
		// HORSESHOE_KILL_KEEP=dir keeps a copy of each store as the kill
		// left it (and the ids committed), to look into a failure.
		if keep := os.Getenv("HORSESHOE_KILL_KEEP"); keep != "" {
			_ = exec.Command("cp", "-a", dir, filepath.Join(keep, strconv.Itoa(i))).Run()
			_ = os.WriteFile(filepath.Join(keep, strconv.Itoa(i)+".ids"), []byte(fmt.Sprint(ids)), 0o644)
		}
		found, err := Check(dir)
		if err != nil || len(found) > 0 {
			t.Fatalf("kill %d after %v (%d pages committed): Check: %v %v", i, d, len(ids), found, err)
		}
		modes := []bool{true, false}
		if i%2 == 1 {
			modes = []bool{false, true}
		}
		for _, ro := range modes {
			db, err := Open(dir, Options{ReadOnly: ro, MinFreeBytes: -1})
			if err != nil {
				t.Fatalf("kill %d after %v (%d pages committed): open (read-only %v): %v", i, d, len(ids), ro, err)
			}
			pages := map[uint64]bool{}
			if err := db.ForEachPage(func(p *Page) error { pages[p.ID] = true; return nil }); err != nil {
				t.Fatalf("kill %d, read-only %v: %v", i, ro, err)
			}
			lost := 0
			for _, id := range committed {
				if !pages[id] {
					lost++
				}
			}
			if lost > 0 {
				t.Errorf("kill %d, read-only %v: %d of the %d pages committed are missing", i, ro, lost, len(committed))
			}
			// Texts and responses: those written since the last kill, and
			// a sample of the others.
			check := ids
			for range min(200, len(committed)) {
				check = append(check, committed[r.IntN(len(committed))])
			}
			for _, id := range check {
				if text, err := db.Text(id); err != nil || text != crashText(id) {
					t.Errorf("kill %d, read-only %v: page %d: text of %d bytes, %v; want the %d written", i, ro, id, len(text), err, len(crashText(id)))
				}
				if _, resp, err := db.Raw(id); err != nil || string(resp) != crashRaw(id) {
					t.Errorf("kill %d, read-only %v: page %d: response %v differs", i, ro, id, err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
		t.Logf("kill %d after %v: %d pages committed (%d in all), store healthy", i, d, len(ids), len(committed))
	}
}

// readOnlyChildEnv names the data dir a re-executed test binary opens
// read-only, printing the error (see TestReadOnlyOpenChild).
const readOnlyChildEnv = "HORSESHOE_STORAGE_READONLY_CHILD"

// TestReadOnlyOpenChild is not a test: run by
// TestCrashedStoreOnReadOnlyMedia as another user.
func TestReadOnlyOpenChild(t *testing.T) {
	dir := os.Getenv(readOnlyChildEnv)
	if dir == "" {
		t.Skip("run by TestCrashedStoreOnReadOnlyMedia")
	}
	db, err := Open(dir, Options{ReadOnly: true, MinFreeBytes: -1})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(0)
	}
	db.Close()
	fmt.Println("opened")
	os.Exit(0)
}

func fileSums(t *testing.T, dir string) map[string]uint32 {
	t.Helper()
	out := map[string]uint32{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = crc32.ChecksumIEEE(b)
	}
	return out
}

func sameSums(t *testing.T, what string, before, after map[string]uint32) {
	t.Helper()
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("%s changed the data dir: %v, then %v", what, before, after)
	}
}

// TestCrashedStoreOnReadOnlyMedia: a store a crash left unclean needs one
// write before Badger reads it (it replays its write-ahead log only when it
// may write). Where the data dir cannot be written, a read-only open says so
// in one line and changes nothing; a crashed store that is also damaged is
// refused without a write (the recovery would cut the damaged value log).
func TestCrashedStoreOnReadOnlyMedia(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	pub, err := os.MkdirTemp("", "horseshoe-ro-") // t.TempDir's parent is private
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pub)
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(pub, "data")
	// The damaged case flips a byte of the first value-log entry: the
	// kill must come after one page is committed (on a loaded machine the
	// child may not have started writing in 700 ms; the flipped byte then
	// lies in the zeros after the last write, which Check rightly takes
	// for a torn write). The child resumes the store each time.
	for committed := 0; committed == 0; {
		committed = len(runCrashChild(t, dir, 700*time.Millisecond))
	}
	if mems, _ := filepath.Glob(filepath.Join(dir, "*.mem")); len(mems) == 0 {
		t.Fatal("the killed store has no write-ahead log to recover")
	}

	t.Run("damaged", func(t *testing.T) {
		cp := filepath.Join(t.TempDir(), "data")
		if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(cp, "000001.vlog")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[vlogHeaderSize+100] ^= 1 // inside the first entry's key or value
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		before := fileSums(t, cp)
		db, err := Open(cp, Options{ReadOnly: true})
		if err == nil {
			db.Close()
			t.Fatal("a crashed and damaged store opened read-only")
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "not closed cleanly") {
			t.Errorf("read-only open: %v; want ErrDamaged saying it was not closed cleanly", err)
		}
		sameSums(t, "a refused read-only open", before, fileSums(t, cp))
	})

	before := fileSums(t, dir)
	bin := filepath.Join(pub, "storage.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestReadOnlyOpenChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), readOnlyChildEnv+"="+dir)
	cmd.Dir = pub
	if os.Geteuid() == 0 {
		// Root writes anywhere: read as nobody, who may read the data
		// dir but not write to it (Badger makes some files 0600).
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if err := os.Chmod(filepath.Join(dir, e.Name()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	line := strings.TrimSpace(string(out))
	if strings.Count(line, "\n") > 0 || !strings.Contains(line, "not closed cleanly") || !strings.Contains(line, "permission denied") || !strings.Contains(line, dir) {
		t.Errorf("read-only open of a crashed store on a read-only data dir: %q; want one line naming the dir, saying it was not closed cleanly and the write was denied", line)
	} else {
		t.Log(line)
	}
	sameSums(t, "a refused read-only open", before, fileSums(t, dir))
}
