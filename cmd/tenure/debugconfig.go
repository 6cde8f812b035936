package main

import (
	"strings"
	"syscall"

	"github.com/tenurekv/tenure/impl/agent"
)

// debugConfig is what only the settings know of /v1/agent/self's
// DebugConfig, under the names of Consul's runtime configuration; the
// agent adds its addresses and identity (impl/agent/selfinfo.go). Secrets
// show as "hidden", as Consul shows them whether set or not.
func (s *settings) debugConfig() map[string]any {
	return map[string]any{
		"Logging":             map[string]any{"LogLevel": strings.ToUpper(s.LogLevel), "LogJSON": false},
		"ClientAddrs":         []string{s.ClientAddr},
		"Bootstrap":           s.Bootstrap,
		"LeaveOnTerm":         s.leaveOnSignal(syscall.SIGTERM),
		"SkipLeaveOnInt":      !s.leaveOnSignal(syscall.SIGINT),
		"EncryptKey":          "hidden",
		"CheckUpdateInterval": s.CheckUpdateInterval.String(),
		"DNSPort":             s.Ports.DNS,
		"GRPCPort":            s.Ports.GRPC,
		"GRPCTLSPort":         s.Ports.GRPCTLS,
		"HTTPSPort":           s.Ports.HTTPS,
		"SerfPortWAN":         s.Ports.SerfWAN,
		"RPCProtocol":         2,
		"RaftProtocol":        3,
	}
}

// buildInfo is the binary's VCS stamp as the agent shows it.
func buildInfo() agent.BuildInfo {
	v := currentVersion()
	b := agent.BuildInfo{Revision: v.Revision}
	if !v.BuildDate.Equal(unknownBuildDate) {
		b.Date = v.BuildDate
	}
	return b
}
