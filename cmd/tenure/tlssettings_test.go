package main

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/internal/testcerts"
)

// TestHonouredKeysBeyondTheWalk: the honoured keys TestEveryConsulKey
// does not reach (the schema lists a type's keys under its first path
// only, so tls.https and tls.internal_rpc are not walked) take effect
// from JSON and HCL, with their own warning only.
func TestHonouredKeysBeyondTheWalk(t *testing.T) {
	walked := map[string]bool{}
	for _, k := range consulSchema().keys() {
		walked[k.path] = true
	}
	n := 0
	for path, sample := range honouredSamples {
		if walked[path] {
			continue
		}
		n++
		for _, format := range []string{"json", "hcl"} {
			s, warnings, err := loadAs(t, format, nest(path, sample.value))
			var want []string
			if sample.warning != "" {
				want = []string{sample.warning}
			}
			if err != nil || !sample.took(s) || !slices.Equal(warnings, want) {
				t.Errorf("%s %s: %v, took %v, warnings %q", format, path, err, sample.took(s), warnings)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d honoured keys beyond the walk: the walk changed, and this test with it", n)
	}
}

// tlsFrom loads config files (JSON, in order) and returns the agent's TLS
// as the builder makes it, and the warnings.
func tlsFrom(t *testing.T, files ...string) (settings, []string, error) {
	t.Helper()
	write := configWriter(t, t.TempDir())
	args := []string{"-dev"}
	for i, f := range files {
		args = append(args, "-config-file", write("c"+string(rune('0'+i))+".json", f))
	}
	return settingsFrom(t, args...)
}

// TestTLSPrecedence is Consul's: a protocol's block over tls.defaults; in
// one file, the tls stanza over the deprecated top-level key; across
// files, the later file, whichever way it said it; verify_incoming_https
// and _rpc reach one protocol each; verify_server_hostname, from
// defaults or internal_rpc, implies verify_outgoing.
func TestTLSPrecedence(t *testing.T) {
	s, warnings, err := tlsFrom(t,
		`{"cert_file":"/dep.pem","key_file":"/dep.key","tls":{"defaults":{"cert_file":"/def.pem","ca_file":"/ca.pem"},"https":{"cert_file":"/https.pem"}}}`,
		`{"verify_incoming_https":true,"ca_file":"/later-ca.pem","tls":{"defaults":{"verify_server_hostname":true}}}`)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.TLS.tlsConfig("dc1", "consul")
	if err != nil {
		t.Fatal(err)
	}
	h, r := cfg.HTTPS, cfg.InternalRPC
	if h.CertFile != "/https.pem" || r.CertFile != "/def.pem" || h.KeyFile != "/dep.key" || r.KeyFile != "/dep.key" {
		t.Errorf("certificates: https %q %q, internal_rpc %q %q", h.CertFile, h.KeyFile, r.CertFile, r.KeyFile)
	}
	if h.CAFile != "/later-ca.pem" || r.CAFile != "/later-ca.pem" {
		t.Errorf("a later file's deprecated ca_file did not win: %q %q", h.CAFile, r.CAFile)
	}
	if !h.VerifyIncoming || r.VerifyIncoming {
		t.Errorf("verify_incoming_https reached https %v and internal_rpc %v", h.VerifyIncoming, r.VerifyIncoming)
	}
	if !r.VerifyServerHostname || !r.VerifyOutgoing || h.VerifyServerHostname {
		t.Errorf("verify_server_hostname: internal_rpc %v (outgoing %v), https %v", r.VerifyServerHostname, r.VerifyOutgoing, h.VerifyServerHostname)
	}
	if cfg.ServerName != "server.dc1.consul" {
		t.Errorf("server name %q", cfg.ServerName)
	}
	for _, w := range []string{"The 'cert_file' field is deprecated. Use the 'tls.defaults.cert_file' field instead.",
		"The 'verify_incoming_https' field is deprecated. Use the 'tls.https.verify_incoming' field instead."} {
		if !slices.Contains(warnings, w) {
			t.Errorf("no warning %q in %q", w, warnings)
		}
	}

	s, warnings, err = tlsFrom(t, `{"tls_min_version":"tls13","tls":{"https":{"tls_min_version":"TLSv1_2","tls_cipher_suites":"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = s.TLS.tlsConfig("dc1", "consul"); err != nil {
		t.Fatal(err)
	}
	if cfg.InternalRPC.MinVersion != tls.VersionTLS13 || cfg.HTTPS.MinVersion != tls.VersionTLS12 ||
		!slices.Equal(cfg.HTTPS.CipherSuites, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}) {
		t.Errorf("versions and suites: %+v", cfg)
	}
	if !slices.Contains(warnings, "'tls_min_version' value 'tls13' is deprecated, please specify 'TLSv1_3' instead") {
		t.Errorf("no warning for the old version name: %q", warnings)
	}
	// Suites a TLS 1.3 minimum cannot use are dropped when inherited.
	s, _, err = tlsFrom(t, `{"tls":{"defaults":{"tls_cipher_suites":"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},"internal_rpc":{"tls_min_version":"TLSv1_3"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = s.TLS.tlsConfig("dc1", "consul"); err != nil || cfg.InternalRPC.CipherSuites != nil || len(cfg.HTTPS.CipherSuites) != 1 {
		t.Errorf("inherited suites under TLS 1.3: %+v %v", cfg, err)
	}
}

// TestTLSSettingsRefused: what Consul's builder refuses, with its words,
// from `tenure agent` and `tenure validate` alike.
func TestTLSSettingsRefused(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"grpc verify_outgoing":         {`{"tls":{"grpc":{"verify_outgoing":true}}}`, "verify_outgoing is not valid in the tls.grpc stanza"},
		"https verify_server_hostname": {`{"tls":{"https":{"verify_server_hostname":false}}}`, "verify_server_hostname is only valid in the tls.defaults and tls.internal_rpc stanzas"},
		"use_auto_cert in defaults":    {`{"tls":{"defaults":{"use_auto_cert":true}}}`, "use_auto_cert is only valid in the tls.grpc stanza"},
		"unknown version": {`{"tls":{"https":{"tls_min_version":"tls12"}}}`,
			"tls.https.tls_min_version: invalid TLS version: no matching TLS version found for tls12, please specify one of [TLS_AUTO, TLSv1_0, TLSv1_1, TLSv1_2, TLSv1_3]"},
		"unknown suite": {`{"tls":{"defaults":{"tls_cipher_suites":"TLS_RSA_WITH_AES_128_CBC_SHA"}}}`,
			"tls.defaults.tls_cipher_suites: invalid TLS cipher suites: no matching Consul Agent TLS cipher suite found for TLS_RSA_WITH_AES_128_CBC_SHA"},
		"suites with TLS 1.3": {`{"tls":{"internal_rpc":{"tls_min_version":"TLSv1_3","tls_cipher_suites":"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}}`,
			"tls.internal_rpc.tls_cipher_suites: TLS 1.3 cipher suites are not configurable"},
		"https port out of range": {`{"ports":{"https":70000}}`, "ports.https: invalid port: 70000"},
		"no HTTP nor HTTPS":       {`{"ports":{"http":-1}}`, "ports.http and ports.https are both off"},
	} {
		if _, _, err := tlsFrom(t, tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		var out, errOut strings.Builder
		path := configWriter(t, t.TempDir())("c.json", tc.file)
		if code := runValidate([]string{path}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("validate %s: exit %d, %q", name, code, errOut.String())
		}
	}
}

// agentFiles are a CA and a server's certificate for 127.0.0.1 and
// server.dc1.consul, with a client's for HTTPS callers.
type agentFiles struct {
	ca                             *testcerts.CA
	cert, key, clientCert, clientK string
}

func newAgentFiles(t *testing.T) agentFiles {
	ca := testcerts.NewCA(t, "ca")
	f := agentFiles{ca: ca}
	f.cert, f.key = ca.Issue(t, testcerts.Leaf{Name: "server", DNSNames: []string{"server.dc1.consul", "localhost"}, IPs: testcerts.Loopback})
	f.clientCert, f.clientK = ca.Issue(t, testcerts.Leaf{Name: "client"})
	return f
}

// TestAgentStartRefusesBadCertificates: a certificate, key or CA file that
// cannot be used stops `tenure agent` with an error naming the file, and
// leaves none of its ports listening.
func TestAgentStartRefusesBadCertificates(t *testing.T) {
	f := newAgentFiles(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ tls, want string }{
		"key file not a key":    {`{"defaults":{"cert_file":"` + f.cert + `","key_file":"` + garbage + `"}}`, "Failed to load cert/key pair"},
		"missing cert file":     {`{"https":{"cert_file":"/nonexistent.pem","key_file":"` + f.key + `"}}`, "/nonexistent.pem"},
		"CA file not a CA":      {`{"internal_rpc":{"ca_file":"` + garbage + `","verify_outgoing":true}}`, "failed to parse PEM in " + garbage},
		"verify_incoming no CA": {`{"internal_rpc":{"cert_file":"` + f.cert + `","key_file":"` + f.key + `","verify_incoming":true}}`, "VerifyIncoming set but no CA certificates were provided"},
	} {
		ports := freeLoopbackPorts(t, 4)
		path := configWriter(t, t.TempDir())("tls.json", `{"tls":`+tc.tls+`}`)
		s, _, err := settingsFrom(t, "-server", "-bootstrap", "-node", "n1", "-data-dir", t.TempDir(), "-bind", "127.0.0.1",
			"-http-port", ports[0], "-https-port", ports[1], "-server-port", ports[2], "-serf-lan-port", ports[3], "-config-file", path)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := s.start(hclog.NewNullLogger()); err == nil {
			_ = a.Shutdown()
			t.Fatalf("%s: started", name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		for _, p := range ports {
			ln, err := net.Listen("tcp", "127.0.0.1:"+p)
			if err != nil {
				t.Fatalf("%s: port %s left in use: %v", name, p, err)
			}
			_ = ln.Close()
		}
	}
}

// TestAgentServesHTTPSAndKeepsItsKeyring: `tenure agent` with Consul's tls
// stanza serves HTTPS (a caller needs a certificate, verify_incoming) and
// HTTP, and with -encrypt writes the gossip keyring into its data dir.
func TestAgentServesHTTPSAndKeepsItsKeyring(t *testing.T) {
	f := newAgentFiles(t)
	dataDir := t.TempDir()
	conf := configWriter(t, t.TempDir())("tls.hcl", `
tls {
  defaults {
    ca_file   = "`+f.ca.File+`"
    cert_file = "`+f.cert+`"
    key_file  = "`+f.key+`"
  }
  https { verify_incoming = true }
  internal_rpc {
    verify_incoming        = true
    verify_server_hostname = true
  }
}
encrypt = "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="
`)
	var a runningAgent
	var httpsPort string
	var lastErr error
	for range 3 { // fresh ports if another process took one meanwhile
		ports := freeLoopbackPorts(t, 4)
		s, warnings, err := settingsFrom(t, "-server", "-bootstrap", "-node", "n1", "-data-dir", dataDir, "-bind", "127.0.0.1",
			"-http-port", ports[0], "-https-port", ports[1], "-server-port", ports[2], "-serf-lan-port", ports[3], "-config-file", conf)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range warnings {
			if strings.Contains(w, "not supported") || strings.Contains(w, "https") {
				t.Errorf("warning %q", w)
			}
		}
		if a, lastErr = s.start(hclog.NewNullLogger()); lastErr == nil {
			httpsPort = ports[1]
			break
		}
	}
	if a == nil {
		t.Fatal(lastErr)
	}
	defer a.Shutdown()
	c, err := api.NewClient(&api.Config{Address: "127.0.0.1:" + httpsPort, Scheme: "https",
		TLSConfig: api.TLSConfig{CAFile: f.ca.File, CertFile: f.clientCert, KeyFile: f.clientK}})
	if err != nil {
		t.Fatal(err)
	}
	if leader := waitLeader(t, c); leader == "" {
		t.Fatal("no leader over HTTPS")
	}
	noCert, err := api.NewClient(&api.Config{Address: "127.0.0.1:" + httpsPort, Scheme: "https", TLSConfig: api.TLSConfig{CAFile: f.ca.File}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noCert.Status().Leader(); err == nil {
		t.Fatal("an HTTPS caller without a certificate was answered")
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "serf", "local.keyring"))
	var keys []string
	if err != nil || json.Unmarshal(b, &keys) != nil || !slices.Equal(keys, []string{"pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="}) {
		t.Fatalf("keyring file %q %v", b, err)
	}
}

// waitLeader asks c for the leader until one is known (the agent elects
// itself after it starts).
func waitLeader(t *testing.T, c *api.Client) string {
	t.Helper()
	for range 3000 {
		if l, err := c.Status().Leader(); err == nil && l != "" {
			return l
		}
		select {
		case <-t.Context().Done():
			return ""
		case <-time.After(10 * time.Millisecond):
		}
	}
	return ""
}

// TestAgentServesHTTPSOnly: with -http-port -1 the agent serves HTTPS
// alone, and names that address as its own.
func TestAgentServesHTTPSOnly(t *testing.T) {
	f := newAgentFiles(t)
	conf := configWriter(t, t.TempDir())("tls.json", `{"tls":{"https":{"cert_file":"`+f.cert+`","key_file":"`+f.key+`"}}}`)
	var a runningAgent
	var lastErr error
	var httpsAddr string
	for range 3 {
		ports := freeLoopbackPorts(t, 3)
		s, _, err := settingsFrom(t, "-dev", "-http-port", "-1", "-https-port", ports[0], "-server-port", ports[1],
			"-serf-lan-port", ports[2], "-config-file", conf)
		if err != nil {
			t.Fatal(err)
		}
		if a, lastErr = s.start(hclog.NewNullLogger()); lastErr == nil {
			httpsAddr = "127.0.0.1:" + ports[0]
			break
		}
	}
	if a == nil {
		t.Fatal(lastErr)
	}
	defer a.Shutdown()
	if a.HTTPAddr() != httpsAddr {
		t.Fatalf("HTTPAddr %s, want the HTTPS address %s", a.HTTPAddr(), httpsAddr)
	}
	c, err := api.NewClient(&api.Config{Address: httpsAddr, Scheme: "https", TLSConfig: api.TLSConfig{CAFile: f.ca.File}})
	if err != nil {
		t.Fatal(err)
	}
	if waitLeader(t, c) == "" {
		t.Fatal("no leader over HTTPS")
	}
}
