// Package testcerts makes certificates for tests: a CA and leaf certificates
// it signs, generated with crypto/x509 and written as PEM files into the
// test's temporary directory, so that no test carries a fixed key or
// depends on the date a file was made.
package testcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// File is the CA certificate as a PEM file.
	File string
	dir  string
}

// serials numbers every certificate made in the process.
var serials atomic.Int64

// NewCA makes a CA named name and writes its certificate to a file in a
// temporary directory of t.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serials.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("testcerts: CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcerts: CA: %v", err)
	}
	dir := t.TempDir()
	ca := &CA{Cert: cert, Key: key, dir: dir, File: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Leaf describes a certificate to issue. With no ExtKeyUsage it is good
// for both ends of a connection, as Consul's server certificates are.
type Leaf struct {
	Name     string // file names and common name
	DNSNames []string
	IPs      []net.IP
	// Expired issues a certificate whose validity ended an hour ago.
	Expired     bool
	ExtKeyUsage []x509.ExtKeyUsage
}

// Issue signs a certificate for l and writes it and its key as PEM files;
// it returns their paths.
func (ca *CA) Issue(t testing.TB, l Leaf) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if l.Expired {
		notBefore, notAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
	}
	usage := l.ExtKeyUsage
	if usage == nil {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serials.Add(1)),
		Subject:      pkix.Name{CommonName: l.Name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		DNSNames:     l.DNSNames,
		IPAddresses:  l.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("testcerts: issue %s: %v", l.Name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testcerts: issue %s: %v", l.Name, err)
	}
	certFile = filepath.Join(ca.dir, l.Name+".pem")
	keyFile = filepath.Join(ca.dir, l.Name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// Loopback is the IP a test certificate for a local agent names.
var Loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcerts: key: %v", err)
	}
	return key
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("testcerts: %v", err)
	}
}
