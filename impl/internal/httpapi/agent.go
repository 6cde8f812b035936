package httpapi

import (
	"github.com/tenurekv/tenure/acl"

	"fmt"
	"net/http"
	"runtime"

	"github.com/tenurekv/tenure/impl/internal/server"

	"github.com/tenurekv/tenure/model"
)

// The agent endpoints describe and act on the server the client talks to.

// agentSelf is GET /v1/agent/self in Consul's shape: Config, Member (the
// agent's gossip member) and Stats, the sections `consul info` prints.
// Always answered locally.
func (h *handler) agentSelf(c *call) error {
	node := h.origin(c)
	if err := h.agentAllowed(c, acl.ResourceAgent, node, acl.AccessRead); err != nil {
		return err // S90
	}
	version := h.opts.Version
	if version == "" {
		version = "tenure"
	}
	opts := h.opts
	opts.Version = version
	out := map[string]any{
		"Config":      selfConfig(&opts, node, h.opts.NodeID, true),
		"DebugConfig": selfDebugConfig(&opts),
		"Member":      map[string]any{"Name": node},
		"Meta":        nonNilMeta(h.opts.NodeMeta),
	}
	isLeader, _, _ := h.b.Leader()
	consul := map[string]string{"server": "true", "leader": fmt.Sprint(isLeader), "leader_addr": h.b.RaftLeaderAddr(),
		"known_datacenters": "1", "bootstrap": "false", "acl": "disabled"}
	stats := map[string]map[string]string{
		"agent":   {"check_monitors": "0", "check_ttls": "0", "checks": "0", "services": "0"},
		"build":   selfBuildStats(&opts),
		"consul":  consul,
		"runtime": {"os": runtime.GOOS, "arch": runtime.GOARCH, "version": runtime.Version(), "max_procs": fmt.Sprint(runtime.GOMAXPROCS(0)), "goroutines": fmt.Sprint(runtime.NumGoroutine()), "cpu_count": fmt.Sprint(runtime.NumCPU())},
	}
	if ro, ok := h.b.(server.RaftOperator); ok {
		stats["raft"] = ro.RaftStats()
	}
	if h.opts.Members != nil {
		local := h.opts.Members.Local()
		out["Member"] = toMemberJSON(local)
		out["Config"].(map[string]any)["BindAddr"] = local.IP
		stats["serf_lan"] = h.opts.Members.Stats()
	}
	out["Stats"] = stats
	return writeJSON(c, http.StatusOK, out)
}

// agentCheck is PUT /v1/agent/check/{pass,warn,fail}/<id>: a catalog write
// of the status of a check on the node of the server the client talked to
// (S48). It answers 200 with no body, as Consul does.
func (h *handler) agentCheck(status model.Health) func(c *call) error {
	return func(c *call) error {
		if err := checkLen("Check ID", c.arg, maxNameLen); err != nil {
			return err
		}
		node := h.origin(c)
		if here, err := h.leaderHere(c, nil); err != nil || !here {
			return err
		}
		var (
			reg    *model.Register
			denied error
		)
		h.b.Read(func(s *model.State) {
			n, okNode := s.Node(node)
			ch, okCheck := s.Check(model.CheckKey{Node: node, CheckID: c.arg})
			if okNode && okCheck {
				reg = &model.Register{Node: node, Address: n.Address, SkipNodeUpdate: true,
					Checks: []model.CheckSpec{{CheckID: ch.CheckID, Name: ch.Name, Status: status}}}
				// S90: as the agent-local update decides it.
				var a *acl.Authorizer
				if a, denied = h.authz(c, s); denied == nil {
					if ch.ServiceID != "" {
						denied = a.Check(acl.ResourceService, ch.ServiceName, acl.AccessWrite)
					} else {
						denied = a.Check(acl.ResourceNode, node, acl.AccessWrite)
					}
				}
			}
		})
		if reg == nil {
			return errorf(http.StatusNotFound,
				"Unknown check ID %q. Ensure that the check ID is passed, not the check name.", c.arg)
		}
		if denied != nil {
			return aclFailure(denied)
		}
		res, err := h.b.Apply(c.r.Context(), model.Command{Register: reg})
		if err != nil {
			return h.applyFailure(err)
		}
		if res.Err != nil {
			return h.rejection(res.Err)
		}
		return nil
	}
}

// nonNilMeta is meta as /v1/agent/self shows it: {} rather than null.
func nonNilMeta(meta map[string]string) map[string]string {
	if meta == nil {
		return map[string]string{}
	}
	return meta
}
