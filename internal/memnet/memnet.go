// Package memnet serves HTTP handlers on an in-memory network: a dial
// returns one end of a net.Pipe and the server's listener accepts the other.
// No socket, no DNS: client and servers started inside a testing/synctest
// bubble run on the bubble's clock, so a test asserts delays as exact
// virtual times.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Network is a set of in-memory servers by address, and the host names that
// resolve to their IPs.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*listener // by "ip:port"
	names     map[string]string    // host name -> IP
	port      int                  // last port handed out
	servers   []*http.Server
	transport *http.Transport
}

// New returns an empty network; "localhost" resolves to 127.0.0.1.
func New() *Network {
	return &Network{listeners: map[string]*listener{}, names: map[string]string{"localhost": "127.0.0.1"}, port: 40000}
}

// Name makes host resolve to ip.
func (n *Network) Name(host, ip string) {
	n.mu.Lock()
	n.names[host] = ip
	n.mu.Unlock()
}

// Serve serves h on ip at a port of its own and returns the port. The
// server runs until Close.
func (n *Network) Serve(ip string, h http.Handler) (port string) {
	n.mu.Lock()
	n.port++
	port = strconv.Itoa(n.port)
	ln := &listener{addr: tcpAddr(ip, n.port), conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[net.JoinHostPort(ip, port)] = ln
	srv := &http.Server{Handler: h}
	n.servers = append(n.servers, srv)
	n.mu.Unlock()
	go srv.Serve(ln)
	return port
}

// LookupIPAddr resolves a name given to Name (or an IP literal); it is a
// fetch.Resolver and a crawl.Resolver.
func (n *Network) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IPAddr{{IP: ip}}, nil
	}
	n.mu.Lock()
	ip, ok := n.names[host]
	n.mu.Unlock()
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

// DialContext connects to the server on addr ("host:port"): connection
// refused when none listens there.
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := n.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	ipPort := net.JoinHostPort(ips[0].IP.String(), port)
	n.mu.Lock()
	ln := n.listeners[ipPort]
	n.mu.Unlock()
	p, _ := strconv.Atoi(port)
	if ln == nil {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: tcpAddr(ips[0].IP.String(), p),
			Err: errors.New("connection refused")}
	}
	c, s := net.Pipe()
	client := &conn{Conn: c, local: tcpAddr("127.0.0.1", 1), remote: ln.addr}
	select {
	case ln.conns <- &conn{Conn: s, local: ln.addr, remote: client.local}:
		return client, nil
	case <-ln.done:
		c.Close()
		s.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Addr: ln.addr, Err: errors.New("connection refused")}
	case <-ctx.Done():
		c.Close()
		s.Close()
		return nil, ctx.Err()
	}
}

// Transport returns the network's HTTP transport (one per network, so
// Close releases its idle connections).
func (n *Network) Transport() *http.Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.transport == nil {
		n.transport = &http.Transport{DialContext: n.DialContext, DisableCompression: true, MaxIdleConnsPerHost: 4}
	}
	return n.transport
}

// Close stops every server and closes the transport's idle connections, so
// that a synctest bubble ends with no goroutine of the network left.
func (n *Network) Close() {
	n.mu.Lock()
	servers, t := n.servers, n.transport
	n.servers = nil
	n.mu.Unlock()
	if t != nil {
		t.CloseIdleConnections()
	}
	for _, s := range servers {
		s.Close()
	}
}

func tcpAddr(ip string, port int) *net.TCPAddr {
	return &net.TCPAddr{IP: net.ParseIP(ip), Port: port}
}

// conn is a pipe end with the addresses a TCP connection would have.
type conn struct {
	net.Conn
	local, remote net.Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

type listener struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("memnet: listener %s: %w", l.addr, net.ErrClosed)
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }
