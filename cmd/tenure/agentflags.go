package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

const agentUsage = `usage: tenure agent [flags]

Runs a tenure agent. The flags are Consul's, with Consul's meaning, so that
a consul agent command line or unit file carries over:

  tenure agent -dev
  tenure agent -server -bootstrap-expect 3 -node n1 -data-dir /var/lib/tenure \
               -bind 10.0.0.1 -retry-join 10.0.0.2 -retry-join 10.0.0.3

-dev runs one in-memory server on 127.0.0.1, as consul agent -dev does.
-server runs a server; -bootstrap-expect N forms the cluster once N servers
have joined the gossip pool (-retry-join), and a server that joins an
existing cluster later is added as a voter; -bootstrap (Consul's bootstrap
mode) makes the server a cluster of its own that elects itself. Without
-server the agent is a client: a gossip member serving the HTTP API on its
own address and sending requests to the servers; sessions created through
it are bound to its own gossip health. -config-file and -config-dir read
Consul's JSON or HCL agent configuration: every key Consul accepts, the
ones tenure does not act on warned about and ignored (flags win).

flags:
`

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// parsedAgentArgs are the command line: the flags that were given (by
// name) and the config files and directories to read first.
type parsedAgentArgs struct {
	flags        settings
	given        map[string]bool
	configPaths  []string // -config-file and -config-dir, in the order given
	configFormat string
	joinUsed     bool
}

// parseAgentArgs reads `tenure agent` flags into a settings value;
// apply copies the given ones over settings loaded from files.
func parseAgentArgs(args []string, stderr io.Writer) (parsedAgentArgs, error) {
	p := parsedAgentArgs{flags: defaultSettings(), given: map[string]bool{}}
	s := &p.flags
	var join, retryJoin, configPaths, nodeMeta stringList
	fs := flag.NewFlagSet("tenure agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, agentUsage)
		fs.PrintDefaults()
	}
	fs.BoolVar(&s.Dev, "dev", false, "run one in-memory server on 127.0.0.1")
	fs.BoolVar(&s.Server, "server", false, "run a server")
	fs.BoolVar(&s.Bootstrap, "bootstrap", false, "bootstrap mode: with no raft data, this server forms a cluster of itself and elects itself")
	fs.IntVar(&s.BootstrapExpect, "bootstrap-expect", 0, "form the cluster once this many servers have joined")
	fs.StringVar(&s.NodeName, "node", "", "node name (default: the host name)")
	fs.StringVar(&s.NodeID, "node-id", "", "node UUID (default: a random one kept in the data dir)")
	fs.Var(&nodeMeta, "node-meta", "key:value meta for this node (repeatable)")
	fs.StringVar(&s.DataDir, "data-dir", "", "directory for the raft log, snapshots and the gossip snapshot")
	fs.StringVar(&s.Datacenter, "datacenter", s.Datacenter, "datacenter name")
	fs.StringVar(&s.BindAddr, "bind", s.BindAddr, "address for the server port and gossip")
	fs.StringVar(&s.AdvertiseAddr, "advertise", "", "address advertised to other agents (default: -bind)")
	fs.StringVar(&s.ClientAddr, "client", s.ClientAddr, "address the HTTP API listens on")
	fs.IntVar(&s.Ports.HTTP, "http-port", s.Ports.HTTP, "HTTP API port")
	fs.IntVar(&s.Ports.Server, "server-port", s.Ports.Server, "server port: raft and requests forwarded by other servers and client agents")
	fs.IntVar(&s.Ports.SerfLAN, "serf-lan-port", s.Ports.SerfLAN, "LAN gossip port")
	fs.IntVar(&s.Ports.DNS, "dns-port", -1, "tenure has no DNS interface: only -1")
	fs.IntVar(&s.Ports.GRPC, "grpc-port", -1, "tenure has no gRPC interface: only -1")
	fs.IntVar(&s.Ports.GRPCTLS, "grpc-tls-port", -1, "tenure has no gRPC interface: only -1")
	fs.IntVar(&s.Ports.SerfWAN, "serf-wan-port", -1, "tenure has no WAN gossip: only -1")
	fs.IntVar(&s.Ports.HTTPS, "https-port", s.Ports.HTTPS, "HTTPS API port (-1: off), with the tls stanza's certificate")
	fs.Var(&retryJoin, "retry-join", "gossip address to join, retried until it answers (repeatable)")
	fs.Var(&join, "join", "deprecated: same as -retry-join (repeatable)")
	fs.DurationVar(&s.RetryInterval, "retry-interval", s.RetryInterval, "time between join attempts")
	fs.StringVar(&s.Encrypt, "encrypt", "", "base64 gossip encryption key (16, 24 or 32 bytes)")
	fs.BoolVar(&s.DisableKeyringFile, "disable-keyring-file", false, "keep the gossip keyring in memory only, not in <data-dir>/serf/local.keyring")
	fs.StringVar(&s.Domain, "domain", s.Domain, "the domain of servers' certificate names (server.<datacenter>.<domain>)")
	fs.StringVar(&s.LogLevel, "log-level", s.LogLevel, "trace, debug, info, warn or error")
	fs.Var(&configPaths, "config-file", "JSON or HCL agent configuration file (repeatable)")
	fs.Var(&configPaths, "config-dir", "directory of .json and .hcl agent configuration files (repeatable)")
	fs.StringVar(&p.configFormat, "config-format", "", "read config files in this format (hcl or json) whatever their extension")
	fs.Float64Var(&s.TTLMultiplier, "ttl-multiplier", s.TTLMultiplier, "tenure: session TTL grace factor, at least 1")
	fs.BoolVar(&s.EnableScriptChecks, "enable-script-checks", false, "allow script checks, including ones registered over HTTP")
	fs.BoolVar(&s.EnableLocalScriptChecks, "enable-local-script-checks", false, "allow script checks from configuration only")
	if err := fs.Parse(args); err != nil {
		return p, err
	}
	if fs.NArg() > 0 {
		return p, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { p.given[f.Name] = true })
	s.Ports.dnsSet, s.Ports.grpcSet, s.Ports.grpcTLSSet = p.given["dns-port"], p.given["grpc-port"], p.given["grpc-tls-port"]
	s.Ports.wanSet = p.given["serf-wan-port"]
	s.RetryJoin = append(append([]string{}, retryJoin...), join...)
	for _, raw := range nodeMeta {
		if s.NodeMeta == nil {
			s.NodeMeta = map[string]string{}
		}
		k, v := parseNodeMeta(raw)
		s.NodeMeta[k] = v
	}
	p.joinUsed = len(join) > 0
	p.configPaths = configPaths
	return p, nil
}

// apply overlays the flags that were given on base (settings from files).
func (p parsedAgentArgs) apply(base settings) settings {
	f := p.flags
	set := func(name string, apply func()) {
		if p.given[name] {
			apply()
		}
	}
	set("dev", func() { base.Dev = f.Dev })
	set("server", func() { base.Server = f.Server })
	set("bootstrap", func() { base.Bootstrap = f.Bootstrap })
	set("bootstrap-expect", func() { base.BootstrapExpect = f.BootstrapExpect })
	set("node", func() { base.NodeName = f.NodeName })
	set("node-id", func() { base.NodeID = f.NodeID })
	set("node-meta", func() { base.NodeMeta = mergeMeta(base.NodeMeta, f.NodeMeta) })
	set("data-dir", func() { base.DataDir = f.DataDir })
	set("datacenter", func() { base.Datacenter = f.Datacenter })
	set("bind", func() { base.BindAddr = f.BindAddr })
	set("advertise", func() { base.AdvertiseAddr = f.AdvertiseAddr })
	set("client", func() { base.ClientAddr = f.ClientAddr })
	set("http-port", func() { base.Ports.HTTP = f.Ports.HTTP })
	set("server-port", func() { base.Ports.Server = f.Ports.Server })
	set("serf-lan-port", func() { base.Ports.SerfLAN = f.Ports.SerfLAN })
	set("https-port", func() { base.Ports.HTTPS = f.Ports.HTTPS })
	for name, port := range map[string]struct {
		v   *int
		set *bool
		val int
	}{
		"dns-port": {&base.Ports.DNS, &base.Ports.dnsSet, f.Ports.DNS}, "grpc-port": {&base.Ports.GRPC, &base.Ports.grpcSet, f.Ports.GRPC},
		"grpc-tls-port": {&base.Ports.GRPCTLS, &base.Ports.grpcTLSSet, f.Ports.GRPCTLS},
		"serf-wan-port": {&base.Ports.SerfWAN, &base.Ports.wanSet, f.Ports.SerfWAN},
	} {
		if p.given[name] {
			*port.v, *port.set = port.val, true
		}
	}
	if p.given["retry-join"] || p.given["join"] {
		base.RetryJoin = append(base.RetryJoin, f.RetryJoin...) // Consul appends list settings
	}
	set("retry-interval", func() { base.RetryInterval = f.RetryInterval })
	set("encrypt", func() { base.Encrypt = f.Encrypt })
	set("disable-keyring-file", func() { base.DisableKeyringFile = f.DisableKeyringFile })
	set("domain", func() { base.Domain = f.Domain })
	set("log-level", func() { base.LogLevel = f.LogLevel })
	set("ttl-multiplier", func() { base.TTLMultiplier = f.TTLMultiplier })
	set("enable-script-checks", func() { base.EnableScriptChecks = f.EnableScriptChecks })
	set("enable-local-script-checks", func() {
		base.EnableLocalScriptChecks, base.localScriptChecksSet = f.EnableLocalScriptChecks, true
	})
	return base
}
