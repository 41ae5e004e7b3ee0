package scaleweb

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestHostIPDistinctLoopback(t *testing.T) {
	seen := map[string]bool{}
	for i := range maxHosts {
		ip := HostIP(i)
		a, err := netip.ParseAddr(ip)
		if err != nil || !a.IsLoopback() {
			t.Fatalf("HostIP(%d) = %q: not a loopback address (%v)", i, ip, err)
		}
		if b := a.As4(); b[3] == 0 || b[3] == 255 {
			t.Fatalf("HostIP(%d) = %s: last octet %d", i, ip, b[3])
		}
		if seen[ip] {
			t.Fatalf("HostIP(%d) = %s given twice", i, ip)
		}
		seen[ip] = true
	}
	if _, err := Generate(t.TempDir(), Options{Hosts: maxHosts + 1}); err == nil {
		t.Fatal("Generate accepted more hosts than there are addresses")
	}
}

var hrefRE = regexp.MustCompile(`href="([^"]+)"`)

// readWeb returns every page's body by "ip path".
func readWeb(t *testing.T, w Web, pages int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ip := range w.Hosts {
		for j := range pages {
			name := filepath.Join(w.Root, ip, "index.html")
			if j > 0 {
				name = filepath.Join(w.Root, ip, "p", strconv.Itoa(j)+".html")
			}
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			out[ip+" "+PagePath(j)] = string(b)
		}
	}
	return out
}

// TestGenerateLinkedAndReachable: every page is reachable from its host's
// index through same-host links, and every link names a page of the web.
func TestGenerateLinkedAndReachable(t *testing.T) {
	o := Options{Hosts: 7, PagesPerHost: 25, Port: 8123, Seed: 3}
	w, err := Generate(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Pages != 7*25 || len(w.Hosts) != 7 || len(w.Seeds()) != 7 || w.Seeds()[1] != "http://127.20.0.2:8123/" {
		t.Fatalf("web %+v, seeds %v", w, w.Seeds())
	}
	pages := readWeb(t, w, o.PagesPerHost)
	cross := 0
	for _, ip := range w.Hosts {
		reached := map[string]bool{"/": true}
		todo := []string{"/"}
		for len(todo) > 0 {
			path := todo[0]
			todo = todo[1:]
			for _, m := range hrefRE.FindAllStringSubmatch(pages[ip+" "+path], -1) {
				href := m[1]
				if strings.HasPrefix(href, "http://") {
					cross++
					hostPort, p, _ := strings.Cut(strings.TrimPrefix(href, "http://"), "/")
					host, port, _ := net.SplitHostPort(hostPort)
					if _, ok := pages[host+" /"+p]; !ok || port != "8123" || host == ip {
						t.Errorf("%s%s links to %s: not a page of another host on the port", ip, path, href)
					}
					continue
				}
				if _, ok := pages[ip+" "+href]; !ok {
					t.Errorf("%s%s links to %s: no such page", ip, path, href)
				}
				if !reached[href] {
					reached[href] = true
					todo = append(todo, href)
				}
			}
		}
		if len(reached) != o.PagesPerHost {
			t.Errorf("host %s: %d of %d pages reachable from /", ip, len(reached), o.PagesPerHost)
		}
	}
	if cross != 2*len(pages) {
		t.Errorf("%d cross-host links, want 2 a page (%d)", cross, 2*len(pages))
	}
	// The same options give the same files.
	w2, err := Generate(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range readWeb(t, w2, o.PagesPerHost) {
		if pages[k] != v {
			t.Fatalf("page %s differs between two generations with one seed", k)
		}
	}
}

// TestGenerateDistinctPages: no two pages, of one host or of two, share more
// than a small part of their 5-word shingles (the host's template), so the
// dedup index meets only distinct pages; and the text is long enough to
// sign (hundreds of words).
func TestGenerateDistinctPages(t *testing.T) {
	w, err := Generate(t.TempDir(), Options{Hosts: 4, PagesPerHost: 15, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	tag := regexp.MustCompile(`<[^>]*>`)
	var keys []string
	sets := map[string]map[string]bool{}
	for k, body := range readWeb(t, w, 15) {
		words := strings.Fields(tag.ReplaceAllString(body, " "))
		if len(words) < 200 {
			t.Errorf("%s: %d words", k, len(words))
		}
		s := map[string]bool{}
		for i := 0; i+5 <= len(words); i++ {
			s[strings.Join(words[i:i+5], " ")] = true
		}
		sets[k] = s
		keys = append(keys, k)
	}
	worst := 0.0
	for i, a := range keys {
		for _, b := range keys[i+1:] {
			inter := 0
			for sh := range sets[a] {
				if sets[b][sh] {
					inter++
				}
			}
			j := float64(inter) / float64(len(sets[a])+len(sets[b])-inter)
			worst = max(worst, j)
		}
	}
	// The template (nav and footer, about 35 words) is a tenth of a page at
	// most; a near-duplicate is 0.9.
	if worst > 0.15 {
		t.Fatalf("two pages share %.2f of their shingles: not distinct", worst)
	}
}
