package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	sockaddr "github.com/hashicorp/go-sockaddr"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/model"
)

// settings are an agent's settings under Consul's names, from config files
// and then flags (flags win), before they become an agent.Config.
type settings struct {
	// configServices and configChecks are the config files' service(s)
	// and check(s) blocks as register bodies (configdefs.go).
	configServices, configChecks []map[string]any
	// reload re-reads the config files for PUT /v1/agent/reload.
	reload func() error

	Server bool
	Dev    bool
	// Bootstrap is Consul's bootstrap mode: a server that, with no raft
	// state, forms a cluster of itself and elects itself at once.
	Bootstrap       bool
	BootstrapExpect int
	NodeName        string
	// NodeID is the node's UUID (-node-id); empty means the one kept in
	// the data dir, made on first start (nodeid.go).
	NodeID string
	// NodeMeta is the operator's meta for the node (-node-meta, node_meta),
	// kept in the catalog by anti-entropy (S63).
	NodeMeta      map[string]string
	DataDir       string
	Datacenter    string
	BindAddr      string
	AdvertiseAddr string
	ClientAddr    string
	Ports         ports
	RetryJoin     []string
	RetryInterval time.Duration
	Encrypt       string
	// EncryptVerifyIncoming and EncryptVerifyOutgoing are Consul's
	// encrypt_verify_incoming and _outgoing (default true); with
	// DisableKeyringFile the gossip keyring is not kept in the data dir.
	EncryptVerifyIncoming, EncryptVerifyOutgoing bool
	DisableKeyringFile                           bool
	// TLS is the tls stanza as the config files set it, their deprecated
	// top-level TLS keys applied (tlssettings.go); file is the file being
	// read's own, merged into TLS once it is read.
	TLS  tlsStanza
	file *tlsFile
	// Domain is Consul's domain, which names servers' certificates
	// (server.<datacenter>.<domain>); tenure has no DNS interface.
	Domain   string
	LogLevel string
	// TTLMultiplier is tenure's own: the session TTL grace factor (S19).
	TTLMultiplier float64
	// Agent checks (CONSUL.md §4): script checks over HTTP, script checks
	// from configuration (defaults to EnableScriptChecks, as in Consul),
	// and how long an output-only check change may wait for the catalog.
	EnableScriptChecks      bool
	EnableLocalScriptChecks bool
	localScriptChecksSet    bool
	CheckUpdateInterval     time.Duration
	// Coordinates are disable_coordinates, sync_coordinate_interval_min
	// and sync_coordinate_rate_target (S89).
	Coordinates agent.CoordinateConfig
	// EnableDebug serves Go's profiles at /debug/pprof/, as Consul's
	// enable_debug does; -dev turns it on, as in Consul.
	EnableDebug bool
	// NoHTTPCache is Consul's http_config.use_cache = false: ?cached reads
	// bypass the agent cache.
	NoHTTPCache bool
	// LeaveOnTerm and SkipLeaveOnInt are Consul's leave_on_terminate and
	// skip_leave_on_interrupt; nil means Consul's default for the role
	// (leaveOnSignal).
	LeaveOnTerm, SkipLeaveOnInt *bool
	// DisableHostname is telemetry.disable_hostname: gauges named without
	// the host.
	DisableHostname bool
	// ACL is the acl block (acl.go).
	ACL aclSettings
	// telemetry is the process's metrics sink, served at /v1/agent/metrics.
	telemetry *agent.MemSink
}

// ports are Consul's port settings. tenure serves HTTP and HTTPS (either
// may be off, 0 or below, not both), its server port (raft) and LAN
// gossip; the others name subsystems it does not have and may only be
// disabled (-1).
type ports struct {
	HTTP, HTTPS, Server, SerfLAN int
	DNS, GRPC, GRPCTLS, SerfWAN  int
	// Set when a flag gave the port: only a flag may not enable a
	// subsystem tenure lacks (a config file's value is warned about).
	dnsSet, grpcSet, grpcTLSSet, wanSet bool
}

// defaultSettings are Consul's defaults (CONSUL.md §13 for gossip).
func defaultSettings() settings {
	return settings{
		Datacenter: "dc1", BindAddr: "0.0.0.0", ClientAddr: "127.0.0.1",
		Ports:         ports{HTTP: 8500, Server: 8300, SerfLAN: 8301, DNS: -1, GRPC: -1, GRPCTLS: -1, SerfWAN: -1, HTTPS: -1},
		RetryInterval: 30 * time.Second, LogLevel: "info", TTLMultiplier: model.DefaultTTLMultiplier,
		CheckUpdateInterval: agent.DefaultCheckUpdateInterval, Domain: "consul",
		EncryptVerifyIncoming: true, EncryptVerifyOutgoing: true,
	}
}

// validate checks the settings as Consul's config builder does, with its
// messages where it has them, and fills in what follows from others.
func (s *settings) validate(warn func(string)) error {
	// Consul lower-cases the agent's datacenter; a request's ?dc must then
	// name it in lower case (httpapi's datacenter check compares exactly).
	s.Datacenter = strings.ToLower(s.Datacenter)
	if hclog.LevelFromString(s.LogLevel) == hclog.NoLevel {
		return fmt.Errorf("unknown log level %q (trace, debug, info, warn, error)", s.LogLevel)
	}
	if err := validateNodeMeta(s.NodeMeta); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		v    int
		set  bool
	}{{"dns", s.Ports.DNS, s.Ports.dnsSet}, {"grpc", s.Ports.GRPC, s.Ports.grpcSet}, {"grpc_tls", s.Ports.GRPCTLS, s.Ports.grpcTLSSet},
		{"serf_wan", s.Ports.SerfWAN, s.Ports.wanSet}} {
		if p.set && p.v != -1 {
			return fmt.Errorf("tenure has no %s listener: its port may only be -1 (disabled), not %d", p.name, p.v)
		}
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"server", s.Ports.Server}, {"serf_lan", s.Ports.SerfLAN}} {
		if p.v < 1 || p.v > 65535 {
			return fmt.Errorf("ports.%s %d is not a port", p.name, p.v)
		}
	}
	// HTTP and HTTPS: 0 or below turns one off, as in Consul.
	for _, p := range []struct {
		name string
		v    int
	}{{"http", s.Ports.HTTP}, {"https", s.Ports.HTTPS}} {
		if p.v > 65535 {
			return fmt.Errorf("ports.%s: invalid port: %d", p.name, p.v)
		}
	}
	if s.Ports.HTTP <= 0 && s.Ports.HTTPS <= 0 {
		return errors.New("ports.http and ports.https are both off: tenure serves its API on at least one")
	}
	if _, err := s.TLS.tlsConfig(s.Datacenter, s.Domain); err != nil {
		return err
	}
	if s.Ports.HTTPS > 0 && pick(s.TLS.HTTPS.CertFile, s.TLS.Defaults.CertFile) == "" {
		warn("ports.https is set but no certificate is: every HTTPS handshake will fail until tls.https (or tls.defaults) cert_file and key_file are")
	}
	if s.BootstrapExpect == 1 {
		// Consul's builder turns an expectation of one into bootstrap mode.
		warn("BootstrapExpect is set to 1; this is the same as Bootstrap mode.")
		s.BootstrapExpect, s.Bootstrap = 0, true
	}
	switch {
	case s.Bootstrap && !s.Server && !s.Dev:
		return errors.New("'bootstrap = true' requires 'server = true'")
	case s.BootstrapExpect < 0:
		return fmt.Errorf("bootstrap_expect cannot be %d. Must be greater than or equal to zero", s.BootstrapExpect)
	case s.BootstrapExpect > 0 && s.Dev:
		return errors.New("'bootstrap_expect > 0' not allowed in dev mode")
	case s.BootstrapExpect > 0 && !s.Server:
		return errors.New("'bootstrap_expect > 0' requires 'server = true'")
	case s.BootstrapExpect > 0 && s.Bootstrap:
		return errors.New("'bootstrap_expect > 0' and 'bootstrap = true' are mutually exclusive")
	case !s.Dev && s.DataDir == "":
		return errors.New("data_dir cannot be empty")
	case s.TTLMultiplier < 1:
		return fmt.Errorf("ttl multiplier %v must be at least 1", s.TTLMultiplier)
	case s.CheckUpdateInterval < 0:
		return fmt.Errorf("check_update_interval %v cannot be negative", s.CheckUpdateInterval)
	}
	if err := s.ACL.validate(); err != nil {
		return err
	}
	if !s.localScriptChecksSet {
		s.EnableLocalScriptChecks = s.EnableScriptChecks
	}
	if s.EnableScriptChecks && !s.ACL.Enabled {
		// tenure has no allow_write_http_from, so Consul's condition is
		// ACLs being off.
		warn("using enable-script-checks without ACLs and without allow_write_http_from is DANGEROUS, use enable-local-script-checks instead")
	}
	if s.Bootstrap && !s.Dev {
		warn("bootstrap = true: do not enable unless necessary")
	}
	if s.BootstrapExpect == 2 {
		warn("A cluster with 2 servers will provide no failure tolerance.")
	}
	if s.Dev {
		// Consul's -dev: everything on loopback, in memory.
		if s.BindAddr == "0.0.0.0" {
			s.BindAddr = "127.0.0.1"
		}
	}
	if s.NodeName == "" {
		s.NodeName, _ = os.Hostname()
		if s.NodeName == "" {
			return errors.New("node name is empty and the host name is unknown: set -node")
		}
	}
	if ip := net.ParseIP(s.BindAddr); ip == nil {
		return errors.New("bind_addr must be an ip address")
	}
	if s.AdvertiseAddr == "" {
		s.AdvertiseAddr = s.BindAddr
		if ip := net.ParseIP(s.BindAddr); ip.IsUnspecified() {
			priv, err := sockaddr.GetPrivateIP()
			if err != nil || priv == "" {
				//lint:ignore ST1005 Consul's message, word for word
				return errors.New("No private IPv4 address found")
			}
			s.AdvertiseAddr = priv
		}
	}
	if ip := net.ParseIP(s.AdvertiseAddr); ip == nil {
		return fmt.Errorf("advertise address %q is not an ip address", s.AdvertiseAddr)
	} else if ip.IsUnspecified() {
		//lint:ignore ST1005 Consul's message, word for word
		return errors.New("Advertise address cannot be 0.0.0.0, :: or [::]")
	}
	if ip := net.ParseIP(s.ClientAddr); ip == nil {
		return fmt.Errorf("client_addr %q is not an ip address", s.ClientAddr)
	}
	if s.Encrypt != "" {
		if _, err := s.encryptKey(); err != nil {
			return err
		}
	}
	return nil
}

func (s *settings) encryptKey() ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s.Encrypt)
	if err == nil {
		switch len(key) {
		case 16, 24, 32:
			return key, nil
		}
		err = fmt.Errorf("key size %d is not 16, 24 or 32 bytes", len(key))
	}
	return nil, fmt.Errorf("encrypt has invalid key: %w", err)
}

// httpAdvertise is the HTTP address the agent advertises (and the catalog
// records): the client address, or the advertise address when HTTP
// listens on every interface; the HTTPS port when HTTP is off.
func (s *settings) httpAdvertise() string {
	host := s.ClientAddr
	if net.ParseIP(host).IsUnspecified() {
		host = s.AdvertiseAddr
	}
	port := s.Ports.HTTP
	if port <= 0 {
		port = s.Ports.HTTPS
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// leaveOnSignal reports whether the agent leaves the cluster gracefully
// on sig, as Consul decides it: leave_on_terminate for SIGTERM (default:
// clients leave, servers do not) and skip_leave_on_interrupt for SIGINT
// (default: servers skip the leave, clients do not).
func (s *settings) leaveOnSignal(sig os.Signal) bool {
	server := s.Server || s.Dev
	if sig == syscall.SIGTERM {
		if s.LeaveOnTerm != nil {
			return *s.LeaveOnTerm
		}
		return !server
	}
	if s.SkipLeaveOnInt != nil {
		return !*s.SkipLeaveOnInt
	}
	return !server
}

// runningAgent is a started server or client agent.
type runningAgent interface {
	HTTPAddr() string
	Members() *agent.GossipPool
	Left() <-chan struct{}
	Shutdown() error
	LoadConfigDefinitions(agent.ConfigDefinitions) error
}

// start starts the agent the settings describe: a server with -server or
// -dev, a client agent otherwise. Its Shutdown also stops the telemetry.
func (s *settings) start(logger hclog.Logger) (runningAgent, error) {
	sink, err := agent.NewTelemetry(agent.TelemetryOptions{DisableHostname: s.DisableHostname})
	if err != nil {
		return nil, err
	}
	s.telemetry = sink
	a, err := s.startAgent(logger)
	if err != nil {
		sink.Stop()
		return nil, err
	}
	return withTelemetry{a, sink}, nil
}

func (s *settings) startAgent(logger hclog.Logger) (runningAgent, error) {
	cfg, err := s.agentConfig(logger)
	if err != nil {
		return nil, err
	}
	if s.Server || s.Dev {
		return agent.New(cfg)
	}
	return agent.NewClient(agent.ClientConfig{NodeName: s.NodeName, NodeID: s.NodeID, Listener: cfg.Listener,
		HTTPSListener: cfg.HTTPSListener, TLS: cfg.TLS, HTTPAddr: cfg.Server.HTTPAddr,
		Gossip: *cfg.Gossip, Join: cfg.Join, RetryInterval: cfg.RetryInterval, Datacenter: s.Datacenter, Version: version,
		Build: cfg.HTTP.Build, DebugConfig: cfg.HTTP.DebugConfig,
		Logger: logger, Local: cfg.Local, Debug: cfg.Debug, Telemetry: cfg.Telemetry, NodeMeta: cfg.NodeMeta,
		NoAgentCache: cfg.NoAgentCache, DataDir: s.DataDir, Reload: cfg.Reload, // a client keeps its registrations in its data dir
		ACL: cfg.ACL, Coordinates: cfg.Coordinates})

}

// withTelemetry is a running agent whose Shutdown also stops the runtime
// statistics of the process's metrics sink.
type withTelemetry struct {
	runningAgent
	sink *agent.MemSink
}

func (w withTelemetry) Shutdown() error {
	err := w.runningAgent.Shutdown()
	w.sink.Stop()
	return err
}

// agentConfig turns validated settings into an agent.
func (s *settings) agentConfig(logger hclog.Logger) (agent.Config, error) {
	if err := s.resolveNodeID(); err != nil {
		return agent.Config{}, err
	}
	srv := agent.ServerConfig{
		NodeName: s.NodeName, HTTPAddr: s.httpAdvertise(), Logger: logger, Dev: s.Dev, DataDir: s.DataDir,
		RaftAddr: net.JoinHostPort(s.AdvertiseAddr, strconv.Itoa(s.Ports.Server)), TTLMultiplier: s.TTLMultiplier,
		BootstrapExpect: s.BootstrapExpect, NodeID: s.NodeID,
	}
	if s.Dev {
		// Consul's -dev writes coordinates every 100 ms (S89).
		srv.CoordinateUpdatePeriod = 100 * time.Millisecond
	}
	if s.Bootstrap && !s.Dev {
		// A raft configuration of this server alone, written only into an
		// empty data dir, as Consul's bootstrap mode stands down when raft
		// data exists.
		srv.Peers = []agent.Peer{{Name: s.NodeName, ID: s.NodeID, RaftAddr: srv.RaftAddr}}
	}
	g, err := s.gossipConfig()
	if err != nil {
		return agent.Config{}, err
	}
	tlsCfg, err := s.TLS.tlsConfig(s.Datacenter, s.Domain)
	if err != nil {
		return agent.Config{}, err
	}
	// Certificates and keys are read now: a bad one stops the start.
	loaded, err := agent.LoadTLS(tlsCfg)
	if err != nil {
		return agent.Config{}, err
	}
	cfg := agent.Config{Server: srv, Gossip: g, Join: s.RetryJoin, RetryInterval: s.RetryInterval,
		HTTP:  agent.HTTPOptions{Datacenter: s.Datacenter, Version: version, Build: buildInfo(), DebugConfig: s.debugConfig()},
		Local: s.localConfig(),
		Debug: s.EnableDebug || s.Dev, Telemetry: s.telemetry, NodeMeta: s.NodeMeta, TLS: loaded, NoAgentCache: s.NoHTTPCache,
		Reload: s.reload, ACL: s.ACL.agentConfig(), Coordinates: s.Coordinates}
	if s.Ports.HTTP > 0 {
		if cfg.Listener, err = net.Listen("tcp", net.JoinHostPort(s.ClientAddr, strconv.Itoa(s.Ports.HTTP))); err != nil {
			return agent.Config{}, fmt.Errorf("listen for HTTP: %w", err)
		}
	}
	if s.Ports.HTTPS > 0 {
		if cfg.HTTPSListener, err = net.Listen("tcp", net.JoinHostPort(s.ClientAddr, strconv.Itoa(s.Ports.HTTPS))); err != nil {
			if cfg.Listener != nil {
				_ = cfg.Listener.Close()
			}
			return agent.Config{}, fmt.Errorf("listen for HTTPS: %w", err)
		}
	}
	return cfg, nil
}

// gossipConfig is the agent's LAN gossip: its address, timing, key and the
// tags Consul's tools read.
func (s *settings) gossipConfig() (*agent.GossipConfig, error) {
	g := &agent.GossipConfig{
		BindAddr: s.BindAddr, BindPort: s.Ports.SerfLAN, AdvertiseAddr: s.AdvertiseAddr, AdvertisePort: s.Ports.SerfLAN,
		Tags: agent.GossipTags(s.Datacenter, buildTag()),
	}
	if !s.Dev {
		g.DataDir = s.DataDir
	}
	if s.Encrypt != "" {
		key, err := s.encryptKey()
		if err != nil {
			return nil, err
		}
		g.EncryptKey = key
	}
	g.DisableKeyringFile = s.DisableKeyringFile
	g.PlainIncoming, g.PlainOutgoing = !s.EncryptVerifyIncoming, !s.EncryptVerifyOutgoing
	return g, nil
}

// localConfig is the agent check settings as the local agent takes them.
func (s *settings) localConfig() agent.LocalConfig {
	cui := s.CheckUpdateInterval
	if cui == 0 {
		cui = -1 // Consul's 0 writes every output change at once
	}
	lc := agent.LocalConfig{CheckUpdateInterval: cui}
	lc.Policy.EnableScriptChecks, lc.Policy.EnableLocalScriptChecks = s.EnableScriptChecks, s.EnableLocalScriptChecks
	return lc
}
