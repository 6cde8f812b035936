package rpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/tlsconf"
	"github.com/tenurekv/tenure/internal/testcerts"
)

// tlsSetup is a CA with a server's and a client agent's certificate, as
// Consul names them for datacenter dc1.
type tlsSetup struct {
	ca                     *testcerts.CA
	serverCert, serverKey  string
	clientCert, clientKey  string
	otherCert, otherKey    string // a server certificate from another CA
	expiredCert, expiredKy string // a server certificate past its validity
}

func newTLSSetup(t *testing.T) tlsSetup {
	ca := testcerts.NewCA(t, "ca")
	other := testcerts.NewCA(t, "other")
	var s tlsSetup
	s.ca = ca
	s.serverCert, s.serverKey = ca.Issue(t, testcerts.Leaf{Name: "server", DNSNames: []string{"server.dc1.consul", "localhost"}})
	s.clientCert, s.clientKey = ca.Issue(t, testcerts.Leaf{Name: "client", DNSNames: []string{"client.dc1.consul"}})
	s.otherCert, s.otherKey = other.Issue(t, testcerts.Leaf{Name: "server", DNSNames: []string{"server.dc1.consul"}})
	s.expiredCert, s.expiredKy = ca.Issue(t, testcerts.Leaf{Name: "expired", DNSNames: []string{"server.dc1.consul"}, Expired: true})
	return s
}

// load is tlsconf.Load of one internal_rpc protocol, for dc1.
func load(t *testing.T, p tlsconf.Protocol) *tlsconf.Loaded {
	t.Helper()
	l, err := tlsconf.Load(tlsconf.Config{InternalRPC: p, ServerName: tlsconf.ServerName("dc1", "consul")})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tlsPort is a server port on loopback running echo, with the TLS l
// describes, raft connections included (raftConns receives them).
func tlsPort(t *testing.T, l *tlsconf.Loaded) (addr string, raftConns <-chan net.Conn) {
	t.Helper()
	addr, raftConns, _ = loggedTLSPort(t, l)
	return addr, raftConns
}

// loggedTLSPort is tlsPort; stop closes the port and returns what it
// logged (Close waits for every connection's goroutine, so the log is
// whole).
func loggedTLSPort(t *testing.T, l *tlsconf.Loaded) (addr string, raftConns <-chan net.Conn, stop func() string) {
	t.Helper()
	var log strings.Builder
	var logMu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Output: lockedWriter{&logMu, &log}, Level: hclog.Debug})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(nil)
	srv.SetHandler(echo)
	d := NewDemux(ln, srv, DialTCP, &PortTLS{Config: l.PortServer(), Required: l.PortRequired(), AuthorizeRaft: l.AuthorizeRaft()}, logger)
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := d.RaftLayer().Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	var once sync.Once
	stop = func() string {
		once.Do(func() {
			if err := d.Close(); err != nil {
				t.Errorf("close demux: %v", err)
			}
		})
		logMu.Lock()
		defer logMu.Unlock()
		return log.String()
	}
	t.Cleanup(func() { stop() })
	return ln.Addr().String(), conns, stop
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// forwardVia sends one request over a pool dialling with dial.
func forwardVia(t *testing.T, dial Dial, addr string) (*Response, error) {
	t.Helper()
	p := NewPool(PoolConfig{Dial: dial})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.Forward(ctx, addr, &Request{Origin: Origin{Node: "agent-1", Token: "tok"}, Method: "GET", URI: "/v1/kv/k"})
}

func clientDial(t *testing.T, p tlsconf.Protocol) Dial {
	t.Helper()
	cfg := load(t, p).PortClient()
	if cfg == nil {
		return DialTCP
	}
	return TLSDial(DialTCP, cfg)
}

// TestTLSForwardsWithVerification: a client agent with a certificate from
// the CA forwards over TLS to a server that verifies both ways, and its
// origin and token arrive unchanged.
func TestTLSForwardsWithVerification(t *testing.T) {
	s := newTLSSetup(t)
	addr, _ := tlsPort(t, load(t, tlsconf.Protocol{CAFile: s.ca.File, CertFile: s.serverCert, KeyFile: s.serverKey, VerifyIncoming: true}))
	dial := clientDial(t, tlsconf.Protocol{CAFile: s.ca.File, CertFile: s.clientCert, KeyFile: s.clientKey, VerifyServerHostname: true})
	resp, err := forwardVia(t, dial, addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Body); !strings.HasPrefix(got, "agent-1|f|t|GET|/v1/kv/k") {
		t.Fatalf("answer %q", got)
	}
}

// TestTLSRefusals: each connection the port's or the dialler's settings
// rule out is refused, and the request fails instead of reaching the
// handler.
func TestTLSRefusals(t *testing.T) {
	s := newTLSSetup(t)
	verifying := tlsconf.Protocol{CAFile: s.ca.File, CertFile: s.serverCert, KeyFile: s.serverKey, VerifyIncoming: true}
	cases := []struct {
		name    string
		server  tlsconf.Protocol
		client  tlsconf.Protocol
		want    string // in the client's error
		wantLog string // in the server's log
	}{
		{"plain connection to a port that requires TLS", verifying, tlsconf.Protocol{}, "",
			"Non-TLS connection attempted with VerifyIncoming set"},
		{"client certificate from another CA", verifying,
			tlsconf.Protocol{CAFile: s.ca.File, CertFile: s.otherCert, KeyFile: s.otherKey, VerifyOutgoing: true}, "",
			"certificate signed by unknown authority"},
		{"no client certificate with verify_incoming", verifying,
			tlsconf.Protocol{CAFile: s.ca.File, VerifyOutgoing: true}, "", "didn't provide a certificate"},
		{"server certificate from another CA", tlsconf.Protocol{CertFile: s.otherCert, KeyFile: s.otherKey},
			tlsconf.Protocol{CAFile: s.ca.File, VerifyOutgoing: true}, "certificate signed by unknown authority", "TLS handshake failed"},
		{"expired server certificate", tlsconf.Protocol{CertFile: s.expiredCert, KeyFile: s.expiredKy},
			tlsconf.Protocol{CAFile: s.ca.File, VerifyOutgoing: true}, "expired", "TLS handshake failed"},
		{"server certificate without server.dc1.consul, verify_server_hostname",
			tlsconf.Protocol{CertFile: s.clientCert, KeyFile: s.clientKey},
			tlsconf.Protocol{CAFile: s.ca.File, VerifyServerHostname: true}, "server.dc1.consul", "TLS handshake failed"},
		{"TLS asked of a server without a certificate", tlsconf.Protocol{},
			tlsconf.Protocol{CAFile: s.ca.File, VerifyOutgoing: true}, "", "this server has no certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr, _, stop := loggedTLSPort(t, load(t, tc.server))
			resp, err := forwardVia(t, clientDial(t, tc.client), addr)
			if err == nil {
				t.Fatalf("answered %d %q; want a refusal", resp.Status, resp.Body)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if log := stop(); !strings.Contains(log, tc.wantLog) {
				t.Fatalf("the server's log does not say %q:\n%s", tc.wantLog, log)
			}
		})
	}
}

// TestTLSWithoutHostnameCheckStillChecksTheCA: without
// verify_server_hostname any name is accepted (servers' certificates are
// not for their addresses), but the chain still must lead to the CA.
func TestTLSWithoutHostnameCheckStillChecksTheCA(t *testing.T) {
	s := newTLSSetup(t)
	addr, _ := tlsPort(t, load(t, tlsconf.Protocol{CertFile: s.clientCert, KeyFile: s.clientKey}))
	if _, err := forwardVia(t, clientDial(t, tlsconf.Protocol{CAFile: s.ca.File, VerifyOutgoing: true}), addr); err != nil {
		t.Fatalf("a CA-signed certificate for another name was refused: %v", err)
	}
}

// TestTLSRaftOnlyForServers: with verify_incoming and
// verify_server_hostname, a client agent's certificate may forward
// requests but is refused on raft, while a server's reaches it.
func TestTLSRaftOnlyForServers(t *testing.T) {
	s := newTLSSetup(t)
	l := load(t, tlsconf.Protocol{CAFile: s.ca.File, CertFile: s.serverCert, KeyFile: s.serverKey, VerifyIncoming: true, VerifyServerHostname: true})
	addr, raftConns := tlsPort(t, l)
	dialAs := func(cert, key string) Dial {
		return clientDial(t, tlsconf.Protocol{CAFile: s.ca.File, CertFile: cert, KeyFile: key, VerifyServerHostname: true})
	}
	if _, err := forwardVia(t, dialAs(s.clientCert, s.clientKey), addr); err != nil {
		t.Fatalf("a client agent's request was refused: %v", err)
	}
	raftDial := func(dial Dial) error {
		layer := newRaftLayer(nil, dial)
		conn, err := layer.Dial(raft.ServerAddress(addr), 10*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		// A refused connection is closed by the server: the read ends.
		_, _ = conn.Write([]byte{0})
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	if err := raftDial(dialAs(s.clientCert, s.clientKey)); err == nil || isTimeout(err) {
		t.Fatalf("a client agent's raft connection was not closed: %v", err)
	}
	select {
	case c := <-raftConns:
		t.Fatalf("a client agent's raft connection reached raft from %s", c.RemoteAddr())
	default:
	}
	go func() { _ = raftDial(dialAs(s.serverCert, s.serverKey)) }()
	c := <-raftConns // reached raft: the test would time out otherwise
	_ = c.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestTLSNotNested: a connection that asks for TLS again inside TLS is
// closed.
func TestTLSNotNested(t *testing.T) {
	s := newTLSSetup(t)
	addr, _ := tlsPort(t, load(t, tlsconf.Protocol{CertFile: s.serverCert, KeyFile: s.serverKey}))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(mustRead(t, s.ca.File))
	conn, err := TLSDial(DialTCP, &tls.Config{RootCAs: pool, ServerName: "localhost"})(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{protoTLS}); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a nested TLS request was not closed: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
