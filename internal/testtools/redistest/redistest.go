// Package redistest starts a real redis-server for a test: on a free loopback
// port, with its data (append-only file) in a temporary directory, stopped at
// the test's cleanup. A test on a machine without redis-server is skipped
// with a message saying so, except under CI, where .ci/run installs Debian's
// redis-server and a missing one is a failure (testtools.Missing).
package redistest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// Server is one redis-server process (restartable on the same port and data).
type Server struct {
	Addr     string      // host:port on 127.0.0.1
	Dir      string      // working directory: appendonly files, the log
	Password string      // Options.Password
	TLS      *tls.Config // with Options.TLS: a client configuration that trusts the server

	tb   testing.TB
	bin  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Options adjusts the server's configuration.
type Options struct {
	// Args are extra configuration directives ("--maxmemory", "10mb", ...).
	Args []string
	// NoPersistence turns the append-only file off (benchmarks of memory).
	NoPersistence bool
	// Password is required of clients (requirepass).
	Password string
	// TLS serves TLS only, with a self-signed certificate for 127.0.0.1
	// (Server.TLS trusts it).
	TLS bool
}

// Start starts a redis-server for tb and stops it at tb's cleanup.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testtools.Require(tb, false, "redis-server ("+err.Error()+")", "apt-get install redis-server (or make test-deps)")
	}
	dir := tb.TempDir()
	s := &Server{Dir: dir, tb: tb, bin: bin}
	port, err := freePort()
	if err != nil {
		tb.Fatalf("redistest: no free port: %v", err)
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.args = []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"),
		"--protected-mode", "yes",
	}
	if o.Password != "" {
		s.Password = o.Password
		s.args = append(s.args, "--requirepass", o.Password)
	}
	if o.TLS {
		cert, key, conf, err := selfSigned(dir)
		if err != nil {
			tb.Fatalf("redistest: certificate: %v", err)
		}
		s.TLS = conf
		s.args = append(s.args, "--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert, "--tls-auth-clients", "no")
	}
	if o.NoPersistence {
		s.args = append(s.args, "--appendonly", "no")
	} else {
		// Every write is on disk before it is acknowledged: a restart
		// loses nothing a client was told is written.
		s.args = append(s.args, "--appendonly", "yes", "--appendfsync", "always")
	}
	s.args = append(s.args, o.Args...)
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Client returns a client of the server, closed at tb's cleanup.
func (s *Server) Client(tb testing.TB) *redis.Client {
	c := redis.NewClient(s.options())
	tb.Cleanup(func() { c.Close() })
	return c
}

func (s *Server) options() *redis.Options {
	return &redis.Options{Addr: s.Addr, MaxRetries: -1, Password: s.Password, TLSConfig: s.TLS}
}

// URL is the server's URL: redis:// or, with TLS, rediss://, with the
// password if there is one.
func (s *Server) URL() string {
	scheme := "redis://"
	if s.TLS != nil {
		scheme = "rediss://"
	}
	auth := ""
	if s.Password != "" {
		auth = ":" + s.Password + "@"
	}
	return scheme + auth + s.Addr + "/0"
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: cannot start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	o := s.options()
	o.DialTimeout = 200 * time.Millisecond
	c := redis.NewClient(o)
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redistest: redis-server exited at start: %s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("redistest: redis-server did not answer within 20s (%v): %s", err, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM: it writes its append-only file and exits)
// and waits for it. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port and data.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

// Resume starts a stopped server again on the same port and data.
func (s *Server) Resume() {
	s.tb.Helper()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

func (s *Server) logTail() string {
	f, err := os.Open(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 10 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key into
// dir and returns their paths and a client configuration that trusts it.
func selfSigned(dir string) (certFile, keyFile string, conf *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return "", "", nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", "", nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Cluster is a Redis Cluster of real redis-servers (masters only), made with
// redis-cli --cluster create.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts n (>= 3) cluster-enabled servers for tb and joins them
// into one cluster; they stop at tb's cleanup.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		testtools.Require(tb, false, "redis-cli ("+err.Error()+")", "apt-get install redis-tools (or make test-deps)")
	}
	cl := &Cluster{}
	var addrs []string
	for i := 0; i < n; i++ {
		s := Start(tb, Options{NoPersistence: true, Args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}})
		cl.Servers = append(cl.Servers, s)
		addrs = append(addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every node must see the cluster ok (the first to do so is not enough:
	// another may still answer CLUSTERDOWN).
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				tb.Fatalf("redistest: cluster not ok at %s within 20s: %v %s", addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return cl
}

// Client returns a cluster client, closed at tb's cleanup.
func (cl *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	var addrs []string
	for _, s := range cl.Servers {
		addrs = append(addrs, s.Addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	tb.Cleanup(func() { c.Close() })
	return c
}
