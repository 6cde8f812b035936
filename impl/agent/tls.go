package agent

import (
	"crypto/tls"
	"errors"
	"net"

	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/impl/internal/tlsconf"
)

// TLSConfig is an agent's TLS settings, TLSProtocol one protocol's (HTTPS,
// the server port), with Consul's meanings; TLS is a TLSConfig whose
// certificate files have been read (LoadTLS).
type (
	TLSConfig   = tlsconf.Config
	TLSProtocol = tlsconf.Protocol
	TLS         = tlsconf.Loaded
)

// LoadTLS reads the files c names; a file that cannot be read, a key that
// does not match its certificate, or a verification without the CA it
// needs is an error naming what is wrong.
func LoadTLS(c TLSConfig) (*TLS, error) { return tlsconf.Load(c) }

// TLSServerName is the name verify_server_hostname requires of a server's
// certificate: server.<datacenter>.<domain>.
func TLSServerName(datacenter, domain string) string { return tlsconf.ServerName(datacenter, domain) }

// useTLS applies c.TLS to the server port (the connections it accepts and
// the ones this agent dials) and returns the HTTPS listener's
// configuration, nil without an HTTPS listener.
func (c *Config) useTLS() (*tls.Config, error) {
	if c.TLS == nil {
		if c.HTTPSListener != nil {
			return nil, errors.New("agent: an HTTPS listener needs TLS settings")
		}
		return nil, nil
	}
	c.Server.Dial = portDial(c.TLS, c.Server.Dial)
	c.Server.PortTLS = &rpc.PortTLS{Config: c.TLS.PortServer(), Required: c.TLS.PortRequired(), AuthorizeRaft: c.TLS.AuthorizeRaft()}
	if c.HTTPSListener == nil {
		return nil, nil
	}
	return c.TLS.HTTPS(), nil
}

// portDial is d (rpc.DialTCP if nil) turned TLS when t's verify_outgoing
// says connections to servers' ports are.
func portDial(t *TLS, d rpc.Dial) rpc.Dial {
	out := t.PortClient()
	if out == nil {
		return d
	}
	if d == nil {
		d = rpc.DialTCP
	}
	return rpc.TLSDial(d, out)
}

// closeAll closes every listener that is set.
func closeAll(lns ...net.Listener) error {
	var errs []error
	for _, ln := range lns {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}
