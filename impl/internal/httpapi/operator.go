package httpapi

import (
	"errors"
	"net/http"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// autopilotConfiguration is GET /v1/operator/autopilot/configuration in
// Consul's shape. tenure has no autopilot: servers join raft as voters and
// leave it only by leave or force-leave (S54), so CleanupDeadServers is
// false; the other fields are Consul's defaults, for tools that read them.
func (h *handler) autopilotConfiguration(c *call) error {
	if err := h.allowed(c, acl.ResourceOperator, "", acl.AccessRead); err != nil {
		return err // S90
	}
	return writeJSON(c, http.StatusOK, map[string]any{
		"CleanupDeadServers":      false,
		"LastContactThreshold":    "200ms",
		"MaxTrailingLogs":         250,
		"MinQuorum":               0,
		"ServerStabilizationTime": "10s",
		"RedundancyZoneTag":       "",
		"DisableUpgradeMigration": false,
		"UpgradeVersionTag":       "",
		"CreateIndex":             0,
		"ModifyIndex":             0,
	})
}

func (h *handler) raftOperator() (server.RaftOperator, error) {
	ro, ok := h.b.(server.RaftOperator)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, "this server has no raft")
	}
	return ro, nil
}

// raftConfiguration is GET /v1/operator/raft/configuration in Consul's
// shape: every server with its node, address, leadership and suffrage,
// and the configuration's raft index. A server's ID is its raft ID, which
// is its node ID (S82).
func (h *handler) raftConfiguration(c *call) error {
	if err := h.allowed(c, acl.ResourceOperator, "", acl.AccessRead); err != nil {
		return err // S90
	}
	ro, err := h.raftOperator()
	if err != nil {
		return err
	}
	servers, index, err := ro.RaftConfiguration()
	if err != nil {
		return errorf(http.StatusInternalServerError, "%s", oneLine(err.Error()))
	}
	type serverJSON struct {
		ID, Node, Address string
		Leader            bool
		ProtocolVersion   string
		Voter             bool
		LastIndex         uint64
	}
	out := struct {
		Servers []serverJSON
		Index   uint64
	}{Servers: []serverJSON{}, Index: index}
	last := ro.LastIndex()
	for _, s := range servers {
		out.Servers = append(out.Servers, serverJSON{ID: s.ID, Node: s.Node, Address: s.Address, Leader: s.Leader,
			ProtocolVersion: "3", Voter: s.Voter, LastIndex: last})
	}
	return writeJSON(c, http.StatusOK, out)
}

// raftRemovePeer is DELETE /v1/operator/raft/peer?id=… or ?address=…,
// with Consul's errors. The leader removes it; a follower forwards.
func (h *handler) raftRemovePeer(c *call) error {
	q := c.query()
	id, address := q.Get("id"), q.Get("address")
	switch {
	case id == "" && address == "":
		return errorf(http.StatusBadRequest, "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove")
	case id != "" && address != "":
		return errorf(http.StatusBadRequest, "Must specify only one of ?id or ?address")
	}
	if here, err := h.leaderHere(c, nil); err != nil || !here {
		return err
	}
	if err := h.allowed(c, acl.ResourceOperator, "", acl.AccessWrite); err != nil {
		return err // S90
	}
	ro, err := h.raftOperator()
	if err != nil {
		return err
	}
	if err := ro.RemovePeer(id, address); err != nil {
		if errors.Is(err, server.ErrNotLeader) {
			return h.applyFailure(err)
		}
		return errorf(http.StatusInternalServerError, "%s", oneLine(err.Error()))
	}
	return nil
}

// catalogDatacenters is GET /v1/catalog/datacenters: tenure has one.
func (h *handler) catalogDatacenters(c *call) error {
	return writeJSON(c, http.StatusOK, []string{h.opts.Datacenter})
}
