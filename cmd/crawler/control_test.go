//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/session"
)

// The control API end to end: a real crawl of the demo web on loopback
// (127.0.0.2 seeded; 127.0.0.4, which nothing there links to, added while it
// runs), driven by real HTTP requests to its --serve address.

var controlURL = regexp.MustCompile(`control API on (http://\S+/)api/`)

// waitControl waits until out shows the control API's base URL.
func waitControl(t *testing.T, out *syncBuffer, done <-chan error) string {
	t.Helper()
	return waitMatch(t, out, done, controlURL)
}

// api sends one control request (token "" for none) and decodes the JSON
// object answered.
func api(t *testing.T, base, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, base+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: %d, not a JSON object: %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, v
}

// waitFor polls cond every 50 ms for up to 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pageRequests returns the paths requested from ip, robots.txt left out.
func pageRequests(w *loopweb.Web, ip string) []string {
	var out []string
	for _, r := range w.RequestsTo(ip) {
		if r.Path != "/robots.txt" {
			out = append(out, r.Path)
		}
	}
	return out
}

// checkBlog checks that the added site was crawled whole: the seed and the
// three posts it links to (in scope only if the seed widened the scope).
func checkBlog(t *testing.T, w *loopweb.Web) {
	t.Helper()
	got := strings.Join(pageRequests(w, "127.0.0.4"), " ")
	for _, p := range []string{"/blog/", "/blog/2025/04/opening-night.html", "/blog/2025/06/anvil-day.html", "/blog/2025/09/league-final.html"} {
		if !strings.Contains(" "+got+" ", " "+p+" ") {
			t.Errorf("added site: %s not requested (requests: %s)", p, got)
		}
	}
}

// pauseQuiet pauses the crawl at base, waits until its fetches in flight
// have finished, and checks that no request reaches the web for hold. It
// returns the status taken then.
func pauseQuiet(t *testing.T, w *loopweb.Web, base, token string, hold time.Duration) map[string]any {
	t.Helper()
	if code, v := api(t, base, token, "POST", "/api/pause", ""); code != 200 || v["state"] != "paused" {
		t.Fatalf("pause: %d %v", code, v)
	}
	var st map[string]any
	waitFor(t, "fetches in flight to finish", func() bool {
		_, st = api(t, base, token, "GET", "/api/status", "")
		return st["active"] == 0.0
	})
	n := len(w.Requests())
	time.Sleep(hold)
	if got := w.Requests(); len(got) != n {
		var paths []string
		for _, r := range got[n:] {
			paths = append(paths, r.Host+r.Path)
		}
		t.Fatalf("paused, yet %d requests reached the web in %v: %v", len(got)-n, hold, paths)
	}
	if _, after := api(t, base, token, "GET", "/api/status", ""); after["state"] != "paused" || after["pages"] != st["pages"] || after["queued"] != st["queued"] {
		t.Fatalf("status moved while paused: %v then %v", st, after)
	}
	if st["queued"].(float64) == 0 {
		t.Fatal("paused with nothing queued: the test proves nothing")
	}
	return st
}

// TestControlSeedsPauseResume: a seed of a second site added mid-crawl is
// fetched with the pages it links to (the scope widened as for a start
// seed); a bad one is a 400 that adds nothing; while paused no request
// reaches the servers for 2 s (at 300 ms per host they would get ~7), and
// after resume the crawl finishes.
func TestControlSeedsPauseResume(t *testing.T) {
	w, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"crawl", "--data", data, "--delay", "300ms", "--workers", "2",
			"--quiet", "--allow-private-networks", "--serve", "127.0.0.1:0", seeds[0]}, &out, io.Discard)
	}()
	base := waitControl(t, &out, done)
	if code, v := api(t, base, "", "GET", "/api/status", ""); code != 200 || v["state"] != "running" {
		t.Fatalf("status: %d %v", code, v)
	}
	blog := w.URL("127.0.0.4", "/blog/")
	for _, bad := range []string{`{"seeds": ["ftp://127.0.0.4/"]}`, `{"seeds": ["` + blog + `", "/relative"]}`, `{"seeds": ["http://169.254.169.254/"]}`} {
		if code, v := api(t, base, "", "POST", "/api/seeds", bad); code != 400 || v["error"] == nil {
			t.Errorf("POST /api/seeds %s: %d %v, want 400 and an error", bad, code, v)
		}
	}
	if code, v := api(t, base, "", "POST", "/api/seeds", `{"seeds": ["`+blog+`"]}`); code != 200 || v["added"] != 1.0 {
		t.Fatalf("add seed: %d %v", code, v)
	}
	waitFor(t, "a request to the added site", func() bool { return len(pageRequests(w, "127.0.0.4")) > 0 })

	pauseQuiet(t, w, base, "", 2*time.Second)
	if code, v := api(t, base, "", "POST", "/api/resume", ""); code != 200 || v["state"] != "running" {
		t.Fatalf("resume: %d %v", code, v)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crawl: %v", err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("crawl did not finish after resume")
	}
	if !strings.Contains(out.String(), "crawl finished") {
		t.Errorf("crawl did not finish: %q", out.String())
	}
	checkBlog(t, w)
	if got := pageRequests(w, "127.0.0.3"); len(got) != 0 {
		t.Errorf("the scope grew past the added seed: %v", got)
	}
}

// TestControlStopLikeInterrupt: POST /api/stop on a paused crawl ends the
// real binary as the first Ctrl-C does (exit 0, "crawl stopped"); the status
// taken before matches the final report; the data dir resumes without any
// URL requested twice, and the seed added through the API is one of the
// crawl's seeds then (its site's links are in scope).
func TestControlStopLikeInterrupt(t *testing.T) {
	bin := buildSignalCrawler(t)
	w, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "crawl", "--data", data, "--delay", "300ms", "--quiet",
		"--allow-private-networks", "--serve", "127.0.0.1:0", seeds[0])
	var out syncBuffer
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	base := waitControl(t, &out, exited)
	waitFor(t, "two page requests", func() bool { return len(pageRequests(w, "127.0.0.2")) >= 2 })
	if code, v := api(t, base, "", "POST", "/api/seeds", `{"seeds": ["`+w.URL("127.0.0.4", "/blog/")+`"]}`); code != 200 {
		t.Fatalf("add seed: %d %v", code, v)
	}
	// Both sites have pages when the status is taken, so "hosts" (known
	// to the crawl) and the report's (with pages) count the same.
	waitFor(t, "a page of the added site", func() bool { return len(pageRequests(w, "127.0.0.4")) > 0 })
	st := pauseQuiet(t, w, base, "", 500*time.Millisecond)
	if code, v := api(t, base, "", "POST", "/api/stop", ""); code != 202 || v["state"] != "stopping" {
		t.Fatalf("stop: %d %v", code, v)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("stopped crawl: %v (a clean stop exits 0)\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("crawl did not exit within 30 s of POST /api/stop")
	}
	if !strings.Contains(out.String(), "crawl stopped") {
		t.Errorf("stdout %q: want the summary of a stopped crawl, as after Ctrl-C", out.String())
	}

	var d report.Data
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", jsonPath}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Stats.Complete {
		t.Error("a stopped crawl reported complete")
	}
	byClass := st["by_class"].(map[string]any)
	for class, n := range d.Stats.ByClass {
		if byClass[class] != float64(n) {
			t.Errorf("class %s: status %v, final report %d", class, byClass[class], n)
		}
	}
	if st["requests"] != float64(d.Stats.Requests) || st["hosts"] != float64(d.Stats.Hosts) {
		t.Errorf("status requests %v hosts %v, final report %d and %d", st["requests"], st["hosts"], d.Stats.Requests, d.Stats.Hosts)
	}
	if len(d.Pages) == 0 || st["pages"].(float64) == 0 {
		t.Fatalf("nothing crawled before the stop: %v", st)
	}

	// The added seed is stored with the one given at the start, and a
	// resume without seeds crawls from both.
	db, err := session.OpenExisting(data)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := db.Seeds()
	db.Close()
	if want := []string{seeds[0], w.URL("127.0.0.4", "/blog/")}; err != nil || !slices.Equal(stored, want) {
		t.Errorf("stored seeds %v (%v), want %v", stored, err, want)
	}
	if code, stderr := runBin(t, bin, "crawl", "--data", data, "--delay", "0", "--quiet", "--allow-private-networks"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	count := map[string]int{}
	for _, r := range w.Requests() {
		if count[r.Host+r.Path]++; count[r.Host+r.Path] > 1 {
			t.Errorf("%s%s requested twice across the stop and the resume", r.Host, r.Path)
		}
	}
	checkBlog(t, w)
}

// nonLoopbackIP returns an address of this machine that is not loopback, or
// "" when it has none.
func nonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			if ln, err := net.Listen("tcp", n.IP.String()+":0"); err == nil {
				ln.Close()
				return n.IP.String()
			}
		}
	}
	return ""
}

// TestControlToken: without a token the crawl refuses to serve on an
// address that is not loopback (exit 2, before anything is crawled); with
// HORSESHOE_TOKEN it serves there, and a request without the token, or with
// a wrong one, is 401 while the right one (bearer or basic password) is
// answered. With a token on loopback, loopback requests need it too.
func TestControlToken(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == "" {
		t.Log("no non-loopback address: the bind rule is checked on 0.0.0.0 and the token on loopback only")
	} else {
		t.Logf("non-loopback address: %s", ip)
	}
	w, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	bind := "0.0.0.0:0"
	if ip != "" {
		bind = ip + ":0"
	}
	t.Setenv("HORSESHOE_TOKEN", "")
	err := run(context.Background(), []string{"crawl", "--data", data, "--quiet", "--serve", bind, seeds[0]}, io.Discard, io.Discard)
	if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(fmt.Sprint(err), "needs a token") {
		t.Fatalf("--serve %s without a token: exit %d, %v", bind, code, err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) || len(w.Requests()) > 0 {
		t.Fatalf("the refused crawl opened its data dir (%v) or crawled (%d requests)", err, len(w.Requests()))
	}

	const token = "test-token-0123456789abcdef"
	t.Setenv("HORSESHOE_TOKEN", token)
	binds := []string{"127.0.0.1:0"}
	if ip != "" {
		binds = append(binds, ip+":0")
	}
	for i, bind := range binds {
		var out syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(context.Background(), []string{"crawl", "--data", filepath.Join(data, fmt.Sprint(i)), "--delay", "300ms",
				"--quiet", "--serve", bind, seeds[0]}, &out, io.Discard)
		}()
		base := waitControl(t, &out, done)
		for _, tok := range []string{"", "test-token-0123456789abcdeX", "test-token"} {
			if code, v := api(t, base, tok, "GET", "/api/status", ""); code != 401 || v["error"] == nil {
				t.Errorf("%s with token %q: %d %v, want 401", base, tok, code, v)
			}
			if code, _ := api(t, base, tok, "POST", "/api/stop", ""); code != 401 {
				t.Errorf("POST /api/stop on %s with token %q: %d, want 401", base, tok, code)
			}
		}
		if resp, err := http.Get(base + "report.json"); err != nil || resp.StatusCode != 401 {
			t.Errorf("report without the token on %s: %v %v, want 401", base, resp, err)
		} else {
			resp.Body.Close()
		}
		if code, v := api(t, base, token, "GET", "/api/status", ""); code != 200 || v["state"] != "running" {
			t.Errorf("status with the token on %s: %d %v", base, code, v)
		}
		req, _ := http.NewRequest("GET", base+"api/status", nil)
		req.SetBasicAuth("me", token)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
			t.Errorf("basic auth with the token on %s: %v %v", base, resp, err)
		} else {
			resp.Body.Close()
		}
		if code, v := api(t, base, token, "POST", "/api/stop", ""); code != 202 {
			t.Errorf("stop with the token: %d %v", code, v)
		}
		select {
		case err := <-done:
			if err != nil || !strings.Contains(out.String(), "crawl stopped") {
				t.Errorf("crawl on %s after stop: %v %q", bind, err, out.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatal("crawl did not stop")
		}
	}
}
