package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
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
	LogLevel      string
	// TTLMultiplier is tenure's own: the session TTL grace factor (S19).
	TTLMultiplier float64
	// Agent checks (CONSUL.md §4): script checks over HTTP, script checks
	// from configuration (defaults to EnableScriptChecks, as in Consul),
	// and how long an output-only check change may wait for the catalog.
	EnableScriptChecks      bool
	EnableLocalScriptChecks bool
	localScriptChecksSet    bool
	CheckUpdateInterval     time.Duration
	// EnableDebug serves Go's profiles at /debug/pprof/, as Consul's
	// enable_debug does; -dev turns it on, as in Consul.
	EnableDebug bool
	// LeaveOnTerm and SkipLeaveOnInt are Consul's leave_on_terminate and
	// skip_leave_on_interrupt; nil means Consul's default for the role
	// (leaveOnSignal).
	LeaveOnTerm, SkipLeaveOnInt *bool
	// ACL is the acl block (acl.go).
	ACL aclSettings
	// telemetry is the process's metrics sink, served at /v1/agent/metrics.
	telemetry *agent.MemSink
}

// ports are Consul's port settings. tenure serves HTTP, its server port
// (raft) and LAN gossip; the others name subsystems it does not have and
// may only be disabled (-1).
type ports struct {
	HTTP, Server, SerfLAN              int
	DNS, GRPC, GRPCTLS, SerfWAN, HTTPS int
	// Set when a flag gave the port: only a flag may not enable a
	// subsystem tenure lacks (a config file's value is warned about).
	dnsSet, grpcSet, grpcTLSSet, wanSet, httpsSet bool
}

// defaultSettings are Consul's defaults (CONSUL.md §13 for gossip).
func defaultSettings() settings {
	return settings{
		Datacenter: "dc1", BindAddr: "0.0.0.0", ClientAddr: "127.0.0.1",
		Ports:         ports{HTTP: 8500, Server: 8300, SerfLAN: 8301, DNS: -1, GRPC: -1, GRPCTLS: -1, SerfWAN: -1, HTTPS: -1},
		RetryInterval: 30 * time.Second, LogLevel: "info", TTLMultiplier: model.DefaultTTLMultiplier,
		CheckUpdateInterval: agent.DefaultCheckUpdateInterval,
	}
}

// validate checks the settings as Consul's config builder does, with its
// messages where it has them, and fills in what follows from others.
func (s *settings) validate(warn func(string)) error {
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
		{"serf_wan", s.Ports.SerfWAN, s.Ports.wanSet}, {"https", s.Ports.HTTPS, s.Ports.httpsSet}} {
		if p.set && p.v != -1 {
			return fmt.Errorf("tenure has no %s listener: its port may only be -1 (disabled), not %d", p.name, p.v)
		}
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"http", s.Ports.HTTP}, {"server", s.Ports.Server}, {"serf_lan", s.Ports.SerfLAN}} {
		if p.v < 1 || p.v > 65535 {
			return fmt.Errorf("ports.%s %d is not a port", p.name, p.v)
		}
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
// listens on every interface.
func (s *settings) httpAdvertise() string {
	host := s.ClientAddr
	if net.ParseIP(host).IsUnspecified() {
		host = s.AdvertiseAddr
	}
	return net.JoinHostPort(host, strconv.Itoa(s.Ports.HTTP))
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
}

// start starts the agent the settings describe: a server with -server or
// -dev, a client agent otherwise.
func (s *settings) start(logger hclog.Logger) (runningAgent, error) {
	sink, err := agent.NewTelemetry()
	if err != nil {
		return nil, err
	}
	s.telemetry = sink
	cfg, err := s.agentConfig(logger)
	if err != nil {
		return nil, err
	}
	if s.Server || s.Dev {
		return agent.New(cfg)
	}
	return agent.NewClient(agent.ClientConfig{NodeName: s.NodeName, NodeID: s.NodeID, Listener: cfg.Listener, HTTPAddr: cfg.Server.HTTPAddr,
		Gossip: *cfg.Gossip, Join: cfg.Join, RetryInterval: cfg.RetryInterval, Datacenter: s.Datacenter, Version: version,
		Logger: logger, Local: cfg.Local, Debug: cfg.Debug, Telemetry: cfg.Telemetry, NodeMeta: cfg.NodeMeta,
		ACL: cfg.ACL, DataDir: s.DataDir})
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
	if s.Bootstrap && !s.Dev {
		// A raft configuration of this server alone, written only into an
		// empty data dir, as Consul's bootstrap mode stands down when raft
		// data exists.
		srv.Peers = []agent.Peer{{Name: s.NodeName, RaftAddr: srv.RaftAddr}}
	}
	g, err := s.gossipConfig()
	if err != nil {
		return agent.Config{}, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.ClientAddr, strconv.Itoa(s.Ports.HTTP)))
	if err != nil {
		return agent.Config{}, fmt.Errorf("listen for HTTP: %w", err)
	}
	return agent.Config{Server: srv, Listener: ln, Gossip: g, Join: s.RetryJoin, RetryInterval: s.RetryInterval,
		HTTP: agent.HTTPOptions{Datacenter: s.Datacenter, Version: version}, Local: s.localConfig(),
		Debug: s.EnableDebug || s.Dev, Telemetry: s.telemetry, NodeMeta: s.NodeMeta, ACL: s.ACL.agentConfig()}, nil
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
