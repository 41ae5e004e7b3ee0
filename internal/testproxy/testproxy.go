// Package testproxy starts real proxy servers on loopback for the tests:
// Debian's tinyproxy (an HTTP proxy that also tunnels CONNECT) and microsocks
// (a SOCKS5 server), each with a config of its own on a free port, its log
// kept for the test to read. .ci/run installs both; elsewhere a test whose
// proxy is missing is skipped (under CI it fails).
package testproxy

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// Proxy is a running proxy server.
type Proxy struct {
	URL     *url.URL // the proxy's URL, credentials included when it wants them
	logPath string   // tinyproxy's log file; "" for microsocks (its output is in out)
	out     *lockedBuffer
}

// Log returns what the proxy logged so far.
func (p *Proxy) Log(tb testing.TB) string {
	tb.Helper()
	if p.logPath == "" {
		return p.out.String()
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		tb.Fatalf("proxy log: %v", err)
	}
	return string(b) + p.out.String()
}

// WaitLog waits (up to 5 s) for the proxy's log to contain s, as a proxy may log a request after
// answering it; it reports whether it did.
func (p *Proxy) WaitLog(tb testing.TB, s string) bool {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(p.Log(tb), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TinyOptions configure tinyproxy.
type TinyOptions struct {
	User, Password string // BasicAuth: requests without these credentials get 407
	ConnectPorts   []int  // the ports CONNECT may reach; none: any port
}

// Tinyproxy starts tinyproxy on 127.0.0.1 and a free port; it is stopped when tb ends.
func Tinyproxy(tb testing.TB, o TinyOptions) *Proxy {
	tb.Helper()
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		testtools.Require(tb, false, "tinyproxy ("+err.Error()+")", "apt-get install tinyproxy-bin (or make test-deps)")
	}
	dir := tb.TempDir()
	port := freePort(tb)
	p := &Proxy{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)},
		logPath: filepath.Join(dir, "tinyproxy.log"), out: &lockedBuffer{}}
	var conf strings.Builder
	fmt.Fprintf(&conf, "Port %d\nListen 127.0.0.1\nTimeout 30\nMaxClients 50\nLogLevel Info\nLogFile %q\n", port, p.logPath)
	if o.User != "" {
		fmt.Fprintf(&conf, "BasicAuth %s %s\n", o.User, o.Password)
		p.URL.User = url.UserPassword(o.User, o.Password)
	}
	for _, cp := range o.ConnectPorts {
		fmt.Fprintf(&conf, "ConnectPort %d\n", cp)
	}
	confPath := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	start(tb, p, port, exec.Command(bin, "-d", "-c", confPath))
	return p
}

// Microsocks starts microsocks on 127.0.0.1 and a free port, with username/password
// authentication when user is set, its outgoing connections bound to bind (so an origin server
// sees them come from that address); it is stopped when tb ends.
func Microsocks(tb testing.TB, user, password, bind string) *Proxy {
	tb.Helper()
	bin, err := exec.LookPath("microsocks")
	if err != nil {
		testtools.Require(tb, false, "microsocks ("+err.Error()+")", "apt-get install microsocks (or make test-deps)")
	}
	port := freePort(tb)
	p := &Proxy{URL: &url.URL{Scheme: "socks5", Host: "127.0.0.1:" + strconv.Itoa(port)}, out: &lockedBuffer{}}
	args := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port)}
	if user != "" {
		args = append(args, "-u", user, "-P", password)
		p.URL.User = url.UserPassword(user, password)
	}
	if bind != "" {
		args = append(args, "-b", bind)
	}
	start(tb, p, port, exec.Command(bin, args...))
	return p
}

// start runs cmd, waits until port accepts connections and stops cmd when tb ends.
func start(tb testing.TB, p *Proxy, port int, cmd *exec.Cmd) {
	tb.Helper()
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			tb.Fatalf("%s exited before listening:\n%s", cmd.Path, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s does not listen on %s:\n%s", cmd.Path, addr, p.out.String())
		}
	}
}

// ClosedPort returns a loopback address where nothing listens (a proxy that is down).
func ClosedPort(tb testing.TB) string {
	return "127.0.0.1:" + strconv.Itoa(freePort(tb))
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
