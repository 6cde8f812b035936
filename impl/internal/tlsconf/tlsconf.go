// Package tlsconf turns an agent's TLS settings, with Consul's meanings
// (the tls stanza's https and internal_rpc blocks, after the binary has
// applied tls.defaults and the deprecated top-level keys), into the
// crypto/tls configurations of the HTTPS listener, of the server port and
// of the connections an agent opens to servers' ports.
//
// Certificates and keys are read once, at start: a file that cannot be read
// or parsed is a start-up error naming the file, never its contents.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Protocol is one protocol's settings.
type Protocol struct {
	// CAFile, or else every file under CAPath, holds the PEM certificates
	// of the CAs that peers' certificates must chain to.
	CAFile, CAPath string
	// CertFile and KeyFile are this agent's certificate and key; both or
	// neither.
	CertFile, KeyFile string
	// VerifyIncoming requires every peer that connects to present a
	// certificate from the CA (and, on the server port, refuses peers
	// that do not speak TLS at all).
	VerifyIncoming bool
	// VerifyOutgoing (server port only) makes every connection this agent
	// opens to a server's port TLS, and checks the server's certificate
	// against the CA.
	VerifyOutgoing bool
	// VerifyServerHostname (server port only) requires a server's
	// certificate to name server.<datacenter>.<domain>: checked on every
	// connection this agent opens, and, with VerifyIncoming, on every
	// raft connection it accepts. It implies VerifyOutgoing, as in Consul.
	VerifyServerHostname bool
	// MinVersion is the lowest TLS version accepted; 0 is TLS 1.2
	// (Consul's TLS_AUTO).
	MinVersion uint16
	// CipherSuites, if set, are the TLS 1.2 suites allowed.
	CipherSuites []uint16
}

// Config is an agent's TLS.
type Config struct {
	HTTPS       Protocol
	InternalRPC Protocol
	// ServerName is the name VerifyServerHostname requires of a
	// server's certificate (ServerName makes it).
	ServerName string
}

// ServerName is the name Consul gives a server's certificate:
// server.<datacenter>.<domain>, the domain without its trailing dot.
func ServerName(datacenter, domain string) string {
	return "server." + datacenter + "." + strings.TrimSuffix(domain, ".")
}

// loaded is one protocol with its files read.
type loaded struct {
	Protocol
	cert *tls.Certificate // nil without CertFile
	cas  *x509.CertPool   // nil without a CA
}

// Loaded is a Config whose files have been read.
type Loaded struct {
	https, rpc loaded
	serverName string
}

// Load reads every file c names and checks that each protocol has what
// its verification needs, with Consul's messages; a Config without any
// setting loads to something that turns nothing on.
func Load(c Config) (*Loaded, error) {
	https, err := load(c.HTTPS)
	if err != nil {
		return nil, fmt.Errorf("tls.https: %w", err)
	}
	c.InternalRPC.VerifyOutgoing = c.InternalRPC.VerifyOutgoing || c.InternalRPC.VerifyServerHostname
	if c.InternalRPC.VerifyServerHostname && c.ServerName == "" {
		return nil, errors.New("tls.internal_rpc: verify_server_hostname needs the datacenter and domain to name servers")
	}
	rpc, err := load(c.InternalRPC)
	if err != nil {
		return nil, fmt.Errorf("tls.internal_rpc: %w", err)
	}
	return &Loaded{https: https, rpc: rpc, serverName: c.ServerName}, nil
}

func load(p Protocol) (loaded, error) {
	l := loaded{Protocol: p}
	switch {
	case p.CertFile != "" && p.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
		if err != nil {
			// crypto/tls's errors name what is wrong, never the key.
			//lint:ignore ST1005 Consul's message
			return l, fmt.Errorf("Failed to load cert/key pair %s and %s: %w", p.CertFile, p.KeyFile, err)
		}
		l.cert = &cert
	case p.CertFile != "" || p.KeyFile != "":
		return l, errors.New("cert_file and key_file must be given together")
	}
	cas, err := loadCAs(p.CAFile, p.CAPath)
	if err != nil {
		return l, err
	}
	l.cas = cas
	if p.VerifyIncoming {
		if cas == nil {
			return l, errors.New("VerifyIncoming set but no CA certificates were provided")
		}
		if l.cert == nil {
			return l, errors.New("VerifyIncoming requires a Cert and Key pair in the configuration file")
		}
	}
	if p.VerifyOutgoing && cas == nil {
		return l, errors.New("VerifyOutgoing set but no CA certificates were provided")
	}
	return l, nil
}

// maxCAFile bounds one CA file: a bundle of a few hundred certificates.
const maxCAFile = 4 << 20

// loadCAs reads caFile, or else every file under caPath, into a pool; nil
// when neither is set.
func loadCAs(caFile, caPath string) (*x509.CertPool, error) {
	var files []string
	switch {
	case caFile != "":
		files = []string{caFile}
	case caPath != "":
		err := filepath.WalkDir(caPath, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			//lint:ignore ST1005 Consul's message
			return nil, fmt.Errorf("Error loading from %s: %w", caPath, err)
		}
		if len(files) == 0 {
			//lint:ignore ST1005 Consul's message
			return nil, errors.New("Error loading from CAPath: no CAs found")
		}
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		b, err := readBounded(f)
		if err != nil {
			//lint:ignore ST1005 Consul's message
			return nil, fmt.Errorf("Error loading from %s: %w", f, err)
		}
		if err := addPEM(pool, b); err != nil {
			// Never the file's contents: a key given as a CA by mistake
			// would end up in the log.
			return nil, fmt.Errorf("failed to parse PEM in %s: %w", f, err)
		}
	}
	return pool, nil
}

func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxCAFile {
		return nil, fmt.Errorf("larger than %d bytes", maxCAFile)
	}
	return os.ReadFile(path)
}

// addPEM adds every certificate of b to pool; b must hold at least one and
// nothing but certificates.
func addPEM(pool *x509.CertPool, b []byte) error {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("a %q block where certificates were expected", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return errors.New("no certificate found")
	}
	return nil
}
