package tlsconf

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/internal/testcerts"
)

// TestLoadRefusesBadInput: each bad setting is a start-up error that names
// what is wrong, and none of them shows a file's contents.
func TestLoadRefusesBadInput(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	cert, key := ca.Issue(t, testcerts.Leaf{Name: "server", DNSNames: []string{"server.dc1.consul"}})
	_, otherKey := ca.Issue(t, testcerts.Leaf{Name: "other"})
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyDir := filepath.Join(dir, "empty")
	if err := os.Mkdir(emptyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	keyBytes, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing certificate file", Config{HTTPS: Protocol{CertFile: filepath.Join(dir, "none.pem"), KeyFile: key}},
			"tls.https: Failed to load cert/key pair"},
		{"certificate file that is not PEM", Config{HTTPS: Protocol{CertFile: garbage, KeyFile: key}}, "Failed to load cert/key pair"},
		{"key of another certificate", Config{InternalRPC: Protocol{CertFile: cert, KeyFile: otherKey}}, "private key does not match public key"},
		{"key file that is a certificate", Config{HTTPS: Protocol{CertFile: cert, KeyFile: cert}}, "Failed to load cert/key pair"},
		{"certificate without key", Config{HTTPS: Protocol{CertFile: cert}}, "cert_file and key_file must be given together"},
		{"key without certificate", Config{InternalRPC: Protocol{KeyFile: key}}, "cert_file and key_file must be given together"},
		{"missing CA file", Config{HTTPS: Protocol{CAFile: filepath.Join(dir, "none.pem")}}, "Error loading from"},
		{"CA file that is a key", Config{HTTPS: Protocol{CAFile: key}}, `a "PRIVATE KEY" block where certificates were expected`},
		{"CA file without certificates", Config{HTTPS: Protocol{CAFile: garbage}}, "no certificate found"},
		{"CA path without files", Config{HTTPS: Protocol{CAPath: emptyDir}}, "no CAs found"},
		{"verify_incoming without a CA", Config{InternalRPC: Protocol{CertFile: cert, KeyFile: key, VerifyIncoming: true}},
			"tls.internal_rpc: VerifyIncoming set but no CA certificates were provided"},
		{"verify_incoming without a certificate", Config{HTTPS: Protocol{CAFile: ca.File, VerifyIncoming: true}},
			"VerifyIncoming requires a Cert and Key pair"},
		{"verify_outgoing without a CA", Config{InternalRPC: Protocol{VerifyOutgoing: true}}, "VerifyOutgoing set but no CA"},
		{"verify_server_hostname without a CA", Config{InternalRPC: Protocol{VerifyServerHostname: true}, ServerName: "server.dc1.consul"},
			"VerifyOutgoing set but no CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), string(keyBytes[30:60])) {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
}

// TestLoadWithoutSettingsTurnsNothingOn: no file, no TLS anywhere.
func TestLoadWithoutSettingsTurnsNothingOn(t *testing.T) {
	l, err := Load(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if l.PortServer() != nil || l.PortClient() != nil || l.PortRequired() || l.AuthorizeRaft() != nil {
		t.Fatal("an empty config turned server-port TLS on")
	}
	if l.HTTPSHasCertificate() {
		t.Fatal("HTTPS has a certificate without one configured")
	}
	if _, err := l.HTTPS().GetCertificate(&tls.ClientHelloInfo{}); err == nil {
		t.Fatal("HTTPS without a certificate answered a handshake")
	}
}

// TestServerName is Consul's name for a server's certificate.
func TestServerName(t *testing.T) {
	if got := ServerName("dc2", "example."); got != "server.dc2.example" {
		t.Fatalf("ServerName = %q", got)
	}
}
