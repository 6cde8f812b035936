package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// common is what every configuration of p shares: versions, suites, the
// CA for both directions and this agent's certificate for both ends.
func (p *loaded) common() *tls.Config {
	c := &tls.Config{
		MinVersion:   p.MinVersion,
		CipherSuites: p.CipherSuites,
		RootCAs:      p.cas,
		ClientCAs:    p.cas,
	}
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	if p.cert != nil {
		c.Certificates = []tls.Certificate{*p.cert}
	}
	// As a client, always show this agent's certificate (an empty one
	// when there is none), as Consul does: crypto/tls would hold back one
	// whose issuer the server does not list, and the server's refusal
	// would then say "no certificate" instead of naming the bad one.
	cert := p.cert
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert == nil {
			return &tls.Certificate{}, nil
		}
		return cert, nil
	}
	return c
}

// server is p's configuration for accepting connections: a client
// certificate from the CA is required with VerifyIncoming, and not asked
// for otherwise.
func (p *loaded) server() *tls.Config {
	c := p.common()
	if p.VerifyIncoming {
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}

// HTTPS is the HTTPS listener's configuration. Without a certificate the
// listener still listens, as Consul's does, and every handshake fails
// (HTTPSHasCertificate lets the caller warn).
func (l *Loaded) HTTPS() *tls.Config {
	c := l.https.server()
	c.NextProtos = []string{"h2", "http/1.1"}
	if l.https.cert == nil {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return nil, errNoHTTPSCertificate
		}
	}
	return c
}

// HTTPSHasCertificate reports whether HTTPS has a certificate to answer
// with.
func (l *Loaded) HTTPSHasCertificate() bool { return l.https.cert != nil }

var errNoHTTPSCertificate = errors.New("no certificate is configured for HTTPS (tls.https or tls.defaults cert_file and key_file)")

// PortServer is the server port's configuration for a connection that asks
// for TLS; nil when there is no certificate to answer with (such a
// connection is then refused).
func (l *Loaded) PortServer() *tls.Config {
	if l.rpc.cert == nil {
		return nil
	}
	return l.rpc.server()
}

// PortRequired reports whether the server port refuses connections that
// do not speak TLS (verify_incoming).
func (l *Loaded) PortRequired() bool { return l.rpc.VerifyIncoming }

// PortClient is the configuration of connections this agent opens to a
// server's port, nil when they stay plain (no verify_outgoing). The
// server's certificate must chain to the CA and, with
// VerifyServerHostname, name server.<datacenter>.<domain>; Consul's
// other servers' certificates are not for their IP addresses, so without
// it no name is checked.
func (l *Loaded) PortClient() *tls.Config {
	if !l.rpc.VerifyOutgoing {
		return nil
	}
	c := l.rpc.common()
	c.ClientCAs = nil
	if l.rpc.VerifyServerHostname {
		c.ServerName = l.serverName
		return c
	}
	// crypto/tls checks a chain only together with a name, so the chain
	// is checked here without one.
	roots := c.RootCAs
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyChain(cs, roots, "", x509.ExtKeyUsageServerAuth)
	}
	return c
}

// AuthorizeRaft checks the peer of a TLS raft connection the server port
// accepted: with VerifyIncoming and VerifyServerHostname, only a server's
// certificate (server.<datacenter>.<domain>, usable as a client) may
// reach raft, as Consul's AuthorizeServerConn decides; a client agent's
// certificate may still forward requests. Nil when nothing is checked.
func (l *Loaded) AuthorizeRaft() func(tls.ConnectionState) error {
	if !l.rpc.VerifyIncoming || !l.rpc.VerifyServerHostname {
		return nil
	}
	roots, name := l.rpc.cas, l.serverName
	return func(cs tls.ConnectionState) error {
		if err := verifyChain(cs, roots, name, x509.ExtKeyUsageClientAuth); err != nil {
			return fmt.Errorf("raft connection refused: the peer's certificate is not a server's (%s): %w", name, err)
		}
		return nil
	}
}

// verifyChain checks the peer's certificate against roots, for name when
// it is set, and for usage.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool, name string, usage x509.ExtKeyUsage) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the peer presented no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: x509.NewCertPool(),
		KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}
