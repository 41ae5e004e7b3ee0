//go:build e2e

package scaleweb

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// TestNginxServesEveryHost: one nginx serves each host's own files on its
// own address, answers only what exists, and logs each request with the
// address it came in on; Rotate hands over exactly the lines so far.
func TestNginxServesEveryHost(t *testing.T) {
	if _, err := NginxBinary(); err != nil {
		testtools.Require(t, false, "nginx ("+err.Error()+")", "apt-get install nginx-light (or make test-deps)")
	}
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	w, err := Generate(filepath.Join(dir, "web"), Options{Hosts: 300, PagesPerHost: 3, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartNginx(w.Root, filepath.Join(dir, "nginx"), port)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(url string) (int, []byte) {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, i := range []int{0, 1, 299} {
		ip := w.Hosts[i]
		want, _ := os.ReadFile(filepath.Join(w.Root, ip, "p", "2.html"))
		if code, got := get("http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + "/p/2.html"); code != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s/p/2.html: status %d, %d bytes, want 200 and the host's own %d bytes", ip, code, len(got), len(want))
		}
	}
	if code, _ := get("http://" + net.JoinHostPort(w.Hosts[5], strconv.Itoa(port)) + "/robots.txt"); code != 404 {
		t.Errorf("robots.txt: status %d, want 404", code)
	}
	log1 := filepath.Join(dir, "1.log")
	if err := n.Rotate(log1); err != nil {
		t.Fatal(err)
	}
	get("http://" + net.JoinHostPort(w.Hosts[7], strconv.Itoa(port)) + "/")
	log2 := filepath.Join(dir, "2.log")
	if err := n.Rotate(log2); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(log1)
	b2, _ := os.ReadFile(log2)
	lines := strings.Split(strings.TrimSpace(string(b1)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], " "+w.Hosts[0]+" 200 /p/2.html") || !strings.Contains(lines[3], " "+w.Hosts[5]+" 404 /robots.txt") {
		t.Errorf("first log:\n%s", b1)
	}
	if f := strings.Fields(string(b2)); len(f) != 4 || f[1] != w.Hosts[7] || f[2] != "200" || f[3] != "/" {
		t.Errorf("second log: %q", b2)
	}
	if n.CPU() < 0 {
		t.Error("negative CPU")
	}
}
