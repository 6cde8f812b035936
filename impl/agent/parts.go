package agent

import (
	"github.com/tenurekv/tenure/impl/internal/fsm"
	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// The server's parts that the binary (cmd/tenure) and the simulator (sim/)
// configure or read. Their packages are internal to impl/, so that the
// agent is the one way in; each is named here for the callers that need
// the name, and is documented in its own package.

// ServerConfig configures the raft server (Config.Server). Its test-only
// hooks are what the simulator's broken-server variants change through
// Config.AdjustServer.
type ServerConfig = server.Config

// Server is a running raft server (Agent.Server): the simulator reads its
// raft and its state.
type Server = server.Server

// Peer is a server of a fixed raft configuration (ServerConfig.Peers), as
// the simulator boots its clusters.
type Peer = server.Peer

// Change is one applied entry, what ServerConfig.Observe receives: the
// simulator records every server's state from it.
type Change = fsm.Change

// Membership is the gossip pool as the server reads it
// (ServerConfig.Membership), and Member one member of it: the simulator's
// lying failure detector wraps it.
type (
	Membership = server.Membership
	Member     = reconcile.Member
)

// MemberFailed is the status of a member that gossip found dead, what the
// lying failure detector reports.
const MemberFailed = reconcile.Failed

// GossipConfig is the agent's LAN gossip (Config.Gossip,
// ClientConfig.Gossip), and GossipPool the running pool that
// Agent.Members and Client.Members return.
type (
	GossipConfig = gossip.Config
	GossipPool   = gossip.Pool
)

// HTTPOptions configures the HTTP API (Config.HTTP), and BuildInfo the
// binary's VCS stamp that /v1/agent/self shows (HTTPOptions.Build,
// ClientConfig.Build).
type (
	HTTPOptions = httpapi.Options
	BuildInfo   = httpapi.BuildInfo
)

// ServerACL is what the server takes of the agent's acl block
// (ServerConfig.ACL); Config.ACL fills it in.
type ServerACL = server.ACLConfig

// LocalConfig configures the agent's own services and checks (Config.Local,
// ClientConfig.Local): the script-check policy, check_update_interval and
// the random parts of checks and anti-entropy.
type LocalConfig = local.Config

// ConfigDefinitions are the services and checks config files define.
type ConfigDefinitions = local.ConfigDefinitions

// DecodeConfigDefinitions decodes config-file services and checks, each
// written as JSON, as the HTTP register endpoints decode their bodies.
func DecodeConfigDefinitions(services, checks [][]byte) (ConfigDefinitions, error) {
	return local.DecodeConfigDefinitions(services, checks)
}

// DefaultCheckUpdateInterval is Consul's check_update_interval.
const DefaultCheckUpdateInterval = local.DefaultCheckUpdateInterval
