package agent

import "slices"

// Components names the parts the agent was built with: the server's
// (Server.Components), then its own. The simulator's assembly test
// compares its servers' list with the binary's.
func (a *Agent) Components() []string {
	return append(a.srv.Components(), a.components...)
}

// agentComponents are the parts New adds around the server, as cfg has
// them; viaPort says whether anti-entropy goes through the server port.
func agentComponents(cfg Config, viaPort bool) []string {
	out := []string{
		"http: Consul's API with connection limits and write deadlines",
		"http: session creates held until the node is registered (S65)",
	}
	if !cfg.NoAgentCache {
		out = append(out, "http: agent cache for ?cached reads, kept fresh by blocking queries")
	}
	if viaPort {
		out = append(out, "local agent: checks and anti-entropy, sent through the server port")
	} else {
		out = append(out, "local agent: checks and anti-entropy, through the API in process")
	}
	if cfg.Local.DataDir != "" {
		out = append(out, "local agent: registrations kept in the data directory, restored at start")
	}
	if cfg.Gossip != nil {
		out = append(out, "gossip: LAN pool with the server's tags")
		out = append(out, "gossip: a new leader announces itself; every agent runs a full anti-entropy sync on it")
		if cfg.Gossip.DataDir != "" {
			out = append(out, "gossip: snapshot of the pool in the data directory, rejoined at restart")
		}
		if len(cfg.Join) > 0 {
			out = append(out, "gossip: retry-join")
		}
	}
	if cfg.Telemetry != nil {
		out = append(out, "telemetry: /v1/agent/metrics")
	}
	if cfg.Debug {
		out = append(out, "debug: /debug/pprof")
	}
	if cfg.AdjustServer != nil {
		out = append(out, "test seam: AdjustServer")
	}
	return slices.Clip(out)
}
