package agent

import (
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/tenurekv/tenure/impl/internal/gossip"
)

// What /v1/agent/self shows as DebugConfig: the settings the agent itself
// knows once it runs (its addresses, with the ports actually bound), under
// the names of Consul's runtime configuration, on top of the caller's
// (Config.HTTP.DebugConfig: what only the binary's settings know, such as
// the log level). consul/api's own tests read SerfAdvertiseAddrLAN from it
// to join an agent to itself.

// tcpAddr is an address as Consul's runtime configuration prints one.
func tcpAddr(hostPort string) string { return "tcp://" + hostPort }

// gossipDebug adds the LAN gossip addresses: the advertised one is the
// pool's own member, the bound one the configured address with the port
// the pool took.
func gossipDebug(out map[string]any, g GossipConfig, local gossip.Member) {
	port := strconv.Itoa(int(local.Port))
	bind := g.BindAddr
	if bind == "" {
		bind = "0.0.0.0"
	}
	out["AdvertiseAddrLAN"] = local.IP
	out["BindAddr"] = bind
	out["SerfAdvertiseAddrLAN"] = tcpAddr(local.Addr())
	out["SerfBindAddrLAN"] = tcpAddr(net.JoinHostPort(bind, port))
	out["SerfPortLAN"] = int(local.Port)
}

// agentDebug adds what server and client agents share.
func agentDebug(out map[string]any, node, nodeID, dc, httpAddr string, join []string, retry time.Duration,
	local LocalConfig, debug bool, meta map[string]string) {
	if retry <= 0 {
		retry = 30 * time.Second
	}
	out["NodeName"] = node
	out["NodeID"] = nodeID
	out["Datacenter"] = dc
	out["PrimaryDatacenter"] = dc
	out["HTTPAddrs"] = []string{tcpAddr(httpAddr)}
	if _, port, err := net.SplitHostPort(httpAddr); err == nil {
		out["HTTPPort"], _ = strconv.Atoi(port)
	}
	out["RetryJoinLAN"] = append([]string{}, join...)
	out["RetryJoinIntervalLAN"] = retry.String()
	out["EnableRemoteScriptChecks"] = local.Policy.EnableScriptChecks
	out["EnableLocalScriptChecks"] = local.Policy.EnableLocalScriptChecks
	out["EnableDebug"] = debug
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	out["NodeMeta"] = m
}

// serverDebugConfig is a server agent's DebugConfig.
func serverDebugConfig(cfg Config, pool *gossip.Pool) map[string]any {
	out := maps.Clone(cfg.HTTP.DebugConfig)
	if out == nil {
		out = map[string]any{}
	}
	dc := cfg.HTTP.Datacenter
	if dc == "" {
		dc = "dc1"
	}
	agentDebug(out, cfg.Server.NodeName, cfg.Server.NodeID, dc, cfg.Server.HTTPAddr, cfg.Join, cfg.RetryInterval,
		cfg.Local, cfg.Debug, cfg.NodeMeta)
	out["ServerMode"] = true
	out["DevMode"] = cfg.Server.Dev
	out["BootstrapExpect"] = cfg.Server.BootstrapExpect
	out["DataDir"] = cfg.Server.DataDir
	if port := serverPort(cfg.Server); port != "" {
		out["RPCAdvertiseAddr"] = tcpAddr(port)
		out["RPCBindAddr"] = tcpAddr(port)
		if _, p, err := net.SplitHostPort(port); err == nil {
			out["ServerPort"], _ = strconv.Atoi(p)
		}
	}
	if pool != nil {
		gossipDebug(out, *cfg.Gossip, pool.Local())
	}
	return out
}

// clientDebugConfig is a client agent's DebugConfig.
func clientDebugConfig(cfg ClientConfig, pool *gossip.Pool) map[string]any {
	out := maps.Clone(cfg.DebugConfig)
	if out == nil {
		out = map[string]any{}
	}
	dc := cfg.Datacenter
	if dc == "" {
		dc = "dc1"
	}
	agentDebug(out, cfg.NodeName, cfg.NodeID, dc, cfg.HTTPAddr, cfg.Join, cfg.RetryInterval, cfg.Local, cfg.Debug, cfg.NodeMeta)
	out["ServerMode"] = false
	out["DevMode"] = false
	gossipDebug(out, cfg.Gossip, pool.Local())
	return out
}
