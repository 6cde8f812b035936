package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/impl/agent"
)

// tlsBlock is one block of Consul's tls stanza (defaults, https,
// internal_rpc, grpc) as the config files set it; nil is unset.
type tlsBlock struct {
	CAFile, CAPath, CertFile, KeyFile, MinVersion, CipherSuites       *string
	VerifyIncoming, VerifyOutgoing, VerifyServerHostname, UseAutoCert *bool
}

// tlsStanza is the tls stanza. tenure has no gRPC: tls.grpc is read only
// for the settings Consul refuses there.
type tlsStanza struct {
	Defaults, HTTPS, InternalRPC, GRPC tlsBlock
}

// tlsBlockKeys are a block's keys, each with the field it sets.
var tlsBlockKeys = map[string]func(b *tlsBlock) any{
	"ca_file":                func(b *tlsBlock) any { return &b.CAFile },
	"ca_path":                func(b *tlsBlock) any { return &b.CAPath },
	"cert_file":              func(b *tlsBlock) any { return &b.CertFile },
	"key_file":               func(b *tlsBlock) any { return &b.KeyFile },
	"tls_min_version":        func(b *tlsBlock) any { return &b.MinVersion },
	"tls_cipher_suites":      func(b *tlsBlock) any { return &b.CipherSuites },
	"verify_incoming":        func(b *tlsBlock) any { return &b.VerifyIncoming },
	"verify_outgoing":        func(b *tlsBlock) any { return &b.VerifyOutgoing },
	"verify_server_hostname": func(b *tlsBlock) any { return &b.VerifyServerHostname },
	"use_auto_cert":          func(b *tlsBlock) any { return &b.UseAutoCert },
}

func (t *tlsStanza) block(name string) *tlsBlock {
	return map[string]*tlsBlock{"defaults": &t.Defaults, "https": &t.HTTPS, "internal_rpc": &t.InternalRPC, "grpc": &t.GRPC}[name]
}

// merge sets over's set fields over t's: a later config file wins key by
// key, as Consul merges its sources.
func (t *tlsStanza) merge(over tlsStanza) {
	for _, name := range []string{"defaults", "https", "internal_rpc", "grpc"} {
		dst, src := t.block(name), over.block(name)
		for _, field := range tlsBlockKeys {
			switch d := field(dst).(type) {
			case **string:
				if s := *field(src).(**string); s != nil {
					*d = s
				}
			case **bool:
				if b := *field(src).(**bool); b != nil {
					*d = b
				}
			}
		}
	}
}

// tlsFile is what one config file sets: its tls stanza and the deprecated
// top-level keys Consul maps into it (applyDeprecated).
type tlsFile struct {
	stanza tlsStanza
	dep    tlsStanza // top-level ca_file… in the block each one moved to
}

// deprecatedTLSKeys are the top-level keys Consul 1.12 moved into the tls
// stanza: the block and key each one now is.
var deprecatedTLSKeys = map[string][2]string{
	"ca_file":                {"defaults", "ca_file"},
	"ca_path":                {"defaults", "ca_path"},
	"cert_file":              {"defaults", "cert_file"},
	"key_file":               {"defaults", "key_file"},
	"tls_cipher_suites":      {"defaults", "tls_cipher_suites"},
	"tls_min_version":        {"defaults", "tls_min_version"},
	"verify_incoming":        {"defaults", "verify_incoming"},
	"verify_incoming_https":  {"https", "verify_incoming"},
	"verify_incoming_rpc":    {"internal_rpc", "verify_incoming"},
	"verify_outgoing":        {"defaults", "verify_outgoing"},
	"verify_server_hostname": {"internal_rpc", "verify_server_hostname"},
}

// deprecatedTLSVersions are the version names of Consul before 1.12.
var deprecatedTLSVersions = map[string]string{"": "TLS_AUTO", "tls10": "TLSv1_0", "tls11": "TLSv1_1", "tls12": "TLSv1_2", "tls13": "TLSv1_3"}

// resolve is the file's tls stanza with its deprecated keys applied where
// the file itself does not set the key they moved to, as Consul applies
// them to each file before merging.
func (f *tlsFile) resolve() tlsStanza {
	out := f.stanza
	for _, name := range []string{"defaults", "https", "internal_rpc"} {
		dst, dep := out.block(name), f.dep.block(name)
		for _, field := range tlsBlockKeys {
			switch d := field(dst).(type) {
			case **string:
				if *d == nil {
					*d = *field(dep).(**string)
				}
			case **bool:
				if *d == nil {
					*d = *field(dep).(**bool)
				}
			}
		}
	}
	return out
}

// tlsHonoured are the config keys of TLS that tenure acts on, set into the
// file being read (settings.file): every key of tls.defaults, tls.https
// and tls.internal_rpc; the tls.grpc keys Consul refuses; and the
// deprecated top-level keys, each with Consul's warning.
func tlsHonoured() map[string]func(s *settings, v any, warn func(string)) error {
	out := map[string]func(s *settings, v any, warn func(string)) error{}
	set := func(target func(s *settings) *tlsBlock, key string) func(s *settings, v any, warn func(string)) error {
		return func(s *settings, v any, _ func(string)) error {
			switch p := tlsBlockKeys[key](target(s)).(type) {
			case **string:
				var str string
				if err := asString(v, &str); err != nil {
					return err
				}
				*p = &str
			case **bool:
				var b bool
				if err := asBool(v, &b); err != nil {
					return err
				}
				*p = &b
			}
			return nil
		}
	}
	for _, block := range []string{"defaults", "https", "internal_rpc"} {
		for key := range tlsBlockKeys {
			out["tls."+block+"."+key] = set(func(s *settings) *tlsBlock { return s.file.stanza.block(block) }, key)
		}
	}
	for _, key := range []string{"verify_outgoing", "verify_server_hostname"} {
		out["tls.grpc."+key] = set(func(s *settings) *tlsBlock { return &s.file.stanza.GRPC }, key)
	}
	for old, to := range deprecatedTLSKeys {
		setter := set(func(s *settings) *tlsBlock { return s.file.dep.block(to[0]) }, to[1])
		out[old] = func(s *settings, v any, warn func(string)) error {
			if old == "tls_min_version" {
				if str, ok := v.(string); ok {
					if now, dep := deprecatedTLSVersions[str]; dep {
						warn(fmt.Sprintf("'tls_min_version' value '%s' is deprecated, please specify '%s' instead", str, now))
						v = now
					}
				}
			}
			warn(fmt.Sprintf("The '%s' field is deprecated. Use the '%s' field instead.", old, "tls."+to[0]+"."+to[1]))
			return setter(s, v, warn)
		}
	}
	out["tls_prefer_server_cipher_suites"] = func(_ *settings, v any, warn func(string)) error {
		var b bool
		if err := asBool(v, &b); err != nil {
			return err
		}
		warn("The 'tls_prefer_server_cipher_suites' field is deprecated and will be ignored.")
		return nil
	}
	return out
}

// tlsVersions are Consul's names of TLS versions; TLS_AUTO is TLS 1.2.
var tlsVersions = map[string]uint16{"TLS_AUTO": tls.VersionTLS12, "TLSv1_0": tls.VersionTLS10,
	"TLSv1_1": tls.VersionTLS11, "TLSv1_2": tls.VersionTLS12, "TLSv1_3": tls.VersionTLS13}

// tlsCipherSuites are the suites Consul's agent accepts, by their names.
var tlsCipherSuites = map[string]uint16{
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA":          tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256":       tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA":          tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384":       tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA":            tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256":         tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA":            tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384":         tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
}

// tlsConfig is the agent's TLS as Consul's config builder makes it from
// the stanza: each of https and internal_rpc takes a key from its own
// block, else from tls.defaults; verify_server_hostname only from
// defaults and internal_rpc, and it implies verify_outgoing. Refusals and
// bad versions or suites are Consul's errors.
func (t *tlsStanza) tlsConfig(datacenter, domain string) (agent.TLSConfig, error) {
	switch {
	case t.GRPC.VerifyOutgoing != nil:
		return agent.TLSConfig{}, errors.New("verify_outgoing is not valid in the tls.grpc stanza")
	case t.GRPC.VerifyServerHostname != nil || t.HTTPS.VerifyServerHostname != nil:
		return agent.TLSConfig{}, errors.New("verify_server_hostname is only valid in the tls.defaults and tls.internal_rpc stanzas")
	case t.Defaults.UseAutoCert != nil || t.HTTPS.UseAutoCert != nil || t.InternalRPC.UseAutoCert != nil:
		return agent.TLSConfig{}, errors.New("use_auto_cert is only valid in the tls.grpc stanza")
	}
	defVersion, err := tlsVersion("tls.defaults.tls_min_version", t.Defaults.MinVersion)
	if err != nil {
		return agent.TLSConfig{}, err
	}
	defSuites, err := tlsSuites("tls.defaults.tls_cipher_suites", t.Defaults.CipherSuites, defVersion)
	if err != nil {
		return agent.TLSConfig{}, err
	}
	protocol := func(name string, b tlsBlock) (agent.TLSProtocol, error) {
		d := t.Defaults
		p := agent.TLSProtocol{CAFile: pick(b.CAFile, d.CAFile), CAPath: pick(b.CAPath, d.CAPath),
			CertFile: pick(b.CertFile, d.CertFile), KeyFile: pick(b.KeyFile, d.KeyFile),
			VerifyIncoming: pickBool(b.VerifyIncoming, d.VerifyIncoming), VerifyOutgoing: pickBool(b.VerifyOutgoing, d.VerifyOutgoing),
			MinVersion: defVersion, CipherSuites: defSuites}
		if b.MinVersion != nil {
			if p.MinVersion, err = tlsVersion("tls."+name+".tls_min_version", b.MinVersion); err != nil {
				return p, err
			}
		}
		switch {
		case b.CipherSuites != nil:
			if p.CipherSuites, err = tlsSuites("tls."+name+".tls_cipher_suites", b.CipherSuites, p.MinVersion); err != nil {
				return p, err
			}
		case p.MinVersion == tls.VersionTLS13:
			// Inherited suites a TLS 1.3 minimum cannot use are dropped,
			// not refused, as Consul does.
			p.CipherSuites = nil
		}
		return p, nil
	}
	https, err := protocol("https", t.HTTPS)
	if err != nil {
		return agent.TLSConfig{}, err
	}
	rpc, err := protocol("internal_rpc", t.InternalRPC)
	if err != nil {
		return agent.TLSConfig{}, err
	}
	rpc.VerifyServerHostname = pickBool(t.InternalRPC.VerifyServerHostname, t.Defaults.VerifyServerHostname)
	rpc.VerifyOutgoing = rpc.VerifyOutgoing || rpc.VerifyServerHostname
	return agent.TLSConfig{HTTPS: https, InternalRPC: rpc, ServerName: agent.TLSServerName(datacenter, domain)}, nil
}

func pick(own, def *string) string {
	if own != nil {
		return *own
	}
	if def != nil {
		return *def
	}
	return ""
}

func pickBool(own, def *bool) bool {
	if own != nil {
		return *own
	}
	return def != nil && *def
}

// tlsVersion is a version setting: unset or empty is TLS_AUTO (TLS 1.2).
func tlsVersion(key string, v *string) (uint16, error) {
	if v == nil || *v == "" {
		return tls.VersionTLS12, nil
	}
	version, ok := tlsVersions[*v]
	if !ok {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range tlsVersions {
				if !yield(n) {
					return
				}
			}
		})
		return 0, fmt.Errorf("%s: invalid TLS version: no matching TLS version found for %s, please specify one of [%s]",
			key, *v, strings.Join(names, ", "))
	}
	return version, nil
}

// tlsSuites is a comma-separated suites setting: nil when unset (Go's
// defaults), an error for a name Consul's agent does not take or for any
// suites with a TLS 1.3 minimum, whose suites are not configurable.
func tlsSuites(key string, v *string, minVersion uint16) ([]uint16, error) {
	if v == nil {
		return nil, nil
	}
	if minVersion == tls.VersionTLS13 {
		return nil, fmt.Errorf("%s: TLS 1.3 cipher suites are not configurable", key)
	}
	text := strings.TrimSpace(*v)
	if text == "" {
		return nil, nil
	}
	var out []uint16
	var unknown []string
	for _, name := range strings.Split(text, ",") {
		if id, ok := tlsCipherSuites[name]; ok {
			out = append(out, id)
		} else {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: invalid TLS cipher suites: no matching Consul Agent TLS cipher suite found for %s", key, strings.Join(unknown, ","))
	}
	return out, nil
}
