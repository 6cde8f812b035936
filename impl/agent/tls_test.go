package agent_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/internal/testcerts"
)

// certs is a CA with Consul-style certificates for datacenter dc1: a
// server's (server.dc1.consul, and 127.0.0.1 for HTTPS), a client
// agent's, a server's from another CA, and an HTTPS client's.
type certs struct {
	ca                  *testcerts.CA
	server, serverKey   string
	client, clientKey   string
	foreign, foreignKey string
	caller, callerKey   string
	foreignCA           *testcerts.CA
}

func newCerts(t *testing.T) certs {
	var c certs
	c.ca, c.foreignCA = testcerts.NewCA(t, "ca"), testcerts.NewCA(t, "foreign")
	c.server, c.serverKey = c.ca.Issue(t, testcerts.Leaf{Name: "server", DNSNames: []string{"server.dc1.consul", "localhost"}, IPs: testcerts.Loopback})
	c.client, c.clientKey = c.ca.Issue(t, testcerts.Leaf{Name: "client", DNSNames: []string{"client.dc1.consul"}})
	c.caller, c.callerKey = c.ca.Issue(t, testcerts.Leaf{Name: "caller", ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	c.foreign, c.foreignKey = c.foreignCA.Issue(t, testcerts.Leaf{Name: "foreign", DNSNames: []string{"server.dc1.consul", "client.dc1.consul"}, IPs: testcerts.Loopback})
	return c
}

func loadTLS(t *testing.T, cfg agent.TLSConfig) *agent.TLS {
	t.Helper()
	cfg.ServerName = agent.TLSServerName("dc1", "consul")
	l, err := agent.LoadTLS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// httpsClient is consul/api over HTTPS to addr, trusting caFile and
// showing cert (none if empty).
func httpsClient(t *testing.T, addr, caFile, cert, key string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: addr, Scheme: "https",
		TLSConfig: api.TLSConfig{CAFile: caFile, CertFile: cert, KeyFile: key}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// insistingClient is httpsClient showing its certificate even when the
// agent does not list its issuer among the CAs it accepts (crypto/tls's
// own choice would then send none).
func insistingClient(t *testing.T, addr, caFile, cert, key string) *api.Client {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }}}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := api.NewClient(&api.Config{Address: addr, Scheme: "https", HttpClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHTTPSBesideHTTP: with ports.https the API answers over HTTPS too,
// plain HTTP still answering; with verify_incoming an HTTPS caller needs a
// certificate from the CA, and a caller that does not trust the agent's CA
// stops at the handshake.
func TestHTTPSBesideHTTP(t *testing.T) {
	c := newCerts(t)
	secure := listen(t)
	logs := &lockedLog{}
	plain := listen(t)
	a := agenttest.StartDevAgent(t, func(cfg *agent.Config) {
		cfg.Server.HTTPAddr, cfg.Listener, cfg.HTTPSListener = "", plain, secure
		cfg.TLS = loadTLS(t, agent.TLSConfig{HTTPS: agent.TLSProtocol{CAFile: c.ca.File, CertFile: c.server, KeyFile: c.serverKey, VerifyIncoming: true}})
		cfg.Server.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	})
	httpsAddr := secure.Addr().String()
	good := httpsClient(t, httpsAddr, c.ca.File, c.caller, c.callerKey)
	if _, err := good.KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatalf("put over HTTPS: %v", err)
	}
	overHTTP, err := api.NewClient(&api.Config{Address: a.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	if kv, _, err := overHTTP.KV().Get("k", nil); err != nil || kv == nil || string(kv.Value) != "v" {
		t.Fatalf("read over HTTP: %v %v", kv, err)
	}
	// Each refusal for its own reason: the agent's log says why it
	// refused a caller, the caller's error why it refused the agent.
	for _, tc := range []struct {
		name             string
		cl               *api.Client
		wantLog, wantErr string
	}{
		{"no client certificate", httpsClient(t, httpsAddr, c.ca.File, "", ""), "client didn't provide a certificate", ""},
		{"client certificate of another CA", insistingClient(t, httpsAddr, c.ca.File, c.foreign, c.foreignKey),
			"certificate signed by unknown authority", ""},
		{"caller that does not trust the CA", httpsClient(t, httpsAddr, c.foreignCA.File, c.caller, c.callerKey),
			"", "certificate signed by unknown authority"},
	} {
		_, _, err := tc.cl.KV().Get("k", nil)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.wantErr)
		}
		if tc.wantLog != "" && !logs.await(tc.wantLog) {
			t.Errorf("%s: the agent never logged %q:\n%s", tc.name, tc.wantLog, logs)
		}
	}
}

// lockedLog collects an agent's log.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// await waits for text to be logged: the agent logs a refused handshake
// on its connection's goroutine, after the caller has seen it fail.
func (l *lockedLog) await(text string) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(l.String(), text) {
			return true
		}
	}
	return false
}

// TestHTTPSOnly: with the HTTP port off, the agent serves HTTPS alone, and
// a plain request to that port is answered as net/http answers one sent
// to an HTTPS server.
func TestHTTPSOnly(t *testing.T) {
	c := newCerts(t)
	secure := listen(t)
	a := agenttest.StartDevAgent(t, func(cfg *agent.Config) {
		cfg.Server.HTTPAddr, cfg.Listener, cfg.HTTPSListener = "", nil, secure
		cfg.TLS = loadTLS(t, agent.TLSConfig{HTTPS: agent.TLSProtocol{CertFile: c.server, KeyFile: c.serverKey}})
	})
	if a.HTTPAddr() != secure.Addr().String() {
		t.Fatalf("HTTPAddr %s, want the HTTPS listener %s", a.HTTPAddr(), secure.Addr())
	}
	if _, err := httpsClient(t, a.HTTPAddr(), c.ca.File, "", "").Status().Leader(); err != nil {
		t.Fatalf("HTTPS: %v", err)
	}
	resp, err := http.Get("http://" + a.HTTPAddr() + "/v1/status/leader")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the HTTPS port: %d", resp.StatusCode)
	}
}

// TestHTTPSWithoutCertificate: an HTTPS port without a certificate
// listens, as Consul's does, and refuses every handshake; an HTTPS
// listener without TLS settings at all stops the start, leaving nothing
// listening.
func TestHTTPSWithoutCertificate(t *testing.T) {
	c := newCerts(t)
	secure := listen(t)
	agenttest.StartDevAgent(t, func(cfg *agent.Config) {
		cfg.Server.HTTPAddr, cfg.HTTPSListener = "", secure
		cfg.TLS = loadTLS(t, agent.TLSConfig{HTTPS: agent.TLSProtocol{CAFile: c.ca.File}})
	})
	if _, err := httpsClient(t, secure.Addr().String(), c.ca.File, "", "").Status().Leader(); err == nil {
		t.Fatal("HTTPS without a certificate answered")
	}
	secure = listen(t)
	if _, err := agent.New(agent.Config{Server: agent.ServerConfig{NodeName: "n", Dev: true, HTTPAddr: "127.0.0.1:0"},
		HTTPSListener: secure}); err == nil {
		t.Fatal("an HTTPS listener without TLS settings started")
	}
	if _, err := secure.Accept(); err == nil {
		t.Fatal("the HTTPS listener was left open")
	}
}

// portTLS is server-port TLS as a server runs it with verify_incoming,
// verify_outgoing and verify_server_hostname.
func portTLS(c certs) agent.TLSConfig {
	return agent.TLSConfig{InternalRPC: agent.TLSProtocol{CAFile: c.ca.File, CertFile: c.server, KeyFile: c.serverKey,
		VerifyIncoming: true, VerifyOutgoing: true, VerifyServerHostname: true}}
}

// TestServerPortTLSCluster: three servers with verified TLS on the server
// port elect a leader (raft over TLS) and forward writes to it; a client
// agent with a certificate from the CA forwards its requests, while one
// without a certificate, or with one from another CA, is refused.
func TestServerPortTLSCluster(t *testing.T) {
	c := newCerts(t)
	cl := agenttest.StartCluster(t, 3, agenttest.ClusterOptions{Adjust: func(_ int, cfg *agent.Config) {
		cfg.TLS = loadTLS(t, portTLS(c))
	}})
	follower := cl.Follower()
	fc, err := api.NewClient(&api.Config{Address: follower.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fc.KV().Put(&api.KVPair{Key: "via-follower", Value: []byte("1")}, nil); err != nil {
		t.Fatalf("write through a follower over TLS: %v", err)
	}

	// A dev server with gossip for client agents to join.
	dev := agenttest.StartDevAgent(t, func(cfg *agent.Config) { cfg.TLS = loadTLS(t, portTLS(c)) })
	for _, tc := range []struct {
		name      string
		cfg       agent.TLSProtocol
		wantError bool
	}{
		{"client certificate", agent.TLSProtocol{CAFile: c.ca.File, CertFile: c.client, KeyFile: c.clientKey, VerifyServerHostname: true}, false},
		{"no certificate", agent.TLSProtocol{CAFile: c.ca.File, VerifyServerHostname: true}, true},
		{"certificate from another CA", agent.TLSProtocol{CAFile: c.ca.File, CertFile: c.foreign, KeyFile: c.foreignKey, VerifyServerHostname: true}, true},
		{"plain", agent.TLSProtocol{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := agenttest.StartClientWith(t, "c-"+strings.ReplaceAll(tc.name, " ", "-"), dev, func(cc *agent.ClientConfig) {
				cc.TLS = loadTLS(t, agent.TLSConfig{InternalRPC: tc.cfg})
			})
			api, err := api.NewClient(&api.Config{Address: client.HTTPAddr()})
			if err != nil {
				t.Fatal(err)
			}
			// The client agent knows the server once gossip has told it.
			var lastErr error
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, lastErr = api.Status().Leader(); lastErr == nil || !strings.Contains(lastErr.Error(), "No known Consul servers") {
					break
				}
			}
			if tc.wantError && lastErr == nil {
				t.Fatal("a request through the client agent was answered")
			}
			if !tc.wantError && lastErr != nil {
				t.Fatalf("a request through the client agent failed: %v", lastErr)
			}
			if tc.wantError && !strings.Contains(lastErr.Error(), "rpc error") {
				t.Fatalf("refusal %v, want the server's connection refused", lastErr)
			}
		})
	}
}
