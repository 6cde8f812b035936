package lockcmd

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/internal/testcerts"
)

// TestLockOverHTTPS: tenure lock reaches an agent that serves HTTPS only
// and requires a client certificate, through Consul's environment
// (CONSUL_HTTP_ADDR=https://…, CONSUL_CACERT, CONSUL_CLIENT_CERT,
// CONSUL_CLIENT_KEY) or through consul lock's flags, which the child then
// inherits; without a client certificate it is refused.
func TestLockOverHTTPS(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	cert, key := ca.Issue(t, testcerts.Leaf{Name: "agent", IPs: testcerts.Loopback})
	clientCert, clientKey := ca.Issue(t, testcerts.Leaf{Name: "lock"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := agenttest.StartDevAgent(t, func(cfg *agent.Config) {
		cfg.Server.HTTPAddr, cfg.Listener, cfg.HTTPSListener = "", nil, ln
		l, err := agent.LoadTLS(agent.TLSConfig{HTTPS: agent.TLSProtocol{CAFile: ca.File, CertFile: cert, KeyFile: key, VerifyIncoming: true}})
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = l
	})
	addr := "https://" + a.HTTPAddr()
	child := `echo "held $CONSUL_LOCK_HELD $CONSUL_CACERT"`

	t.Setenv("CONSUL_HTTP_ADDR", addr)
	t.Setenv("CONSUL_CACERT", ca.File)
	t.Setenv("CONSUL_CLIENT_CERT", clientCert)
	t.Setenv("CONSUL_CLIENT_KEY", clientKey)
	out, errOut := newOutput(), newOutput()
	if code := Run(context.Background(), []string{"-lock-delay", "0s", uniq("https"), child}, out, errOut); code != 0 {
		t.Fatalf("through the environment: exit %d; stderr %q", code, errOut.String())
	}
	if got := out.String(); got != "held true "+ca.File+"\n" {
		t.Fatalf("child printed %q", got)
	}

	t.Setenv("CONSUL_HTTP_ADDR", "127.0.0.1:1")
	for _, k := range []string{"CONSUL_CACERT", "CONSUL_CLIENT_CERT", "CONSUL_CLIENT_KEY"} {
		t.Setenv(k, "")
	}
	out, errOut = newOutput(), newOutput()
	args := []string{"-http-addr", addr, "-ca-file", ca.File, "-client-cert", clientCert, "-client-key", clientKey,
		"-lock-delay", "0s", uniq("https"), child}
	if code := Run(context.Background(), args, out, errOut); code != 0 {
		t.Fatalf("through the flags: exit %d; stderr %q", code, errOut.String())
	}
	if got := out.String(); got != "held true "+ca.File+"\n" {
		t.Fatalf("child printed %q", got)
	}

	out, errOut = newOutput(), newOutput()
	args = []string{"-http-addr", addr, "-ca-file", ca.File, "-timeout", "10s", uniq("https"), child}
	if code := Run(context.Background(), args, out, errOut); code != 1 || out.String() != "" {
		t.Fatalf("without a client certificate: exit %d, child printed %q", code, out.String())
	}
	// The same request as above but for the certificate; the refusal
	// comes at the handshake, which TLS 1.3 over HTTP/2 reports only as
	// a connection that could not be established.
	if !strings.Contains(errOut.String(), "lock acquisition failed") {
		t.Fatalf("without a client certificate: %q", errOut.String())
	}
}
