package httpapi

import "net/http"

// statusLeader is GET /v1/status/leader: the raft address as a JSON string,
// served by whichever server is asked.
func (h *handler) statusLeader(c *call) error {
	if _, err := parseQuery(c.query()); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, h.b.RaftLeaderAddr())
}

// statusPeers is GET /v1/status/peers: the raft addresses of the voters.
func (h *handler) statusPeers(c *call) error {
	if _, err := parseQuery(c.query()); err != nil {
		return err
	}
	peers := h.b.Peers()
	if peers == nil {
		peers = []string{}
	}
	return writeJSON(c, http.StatusOK, peers)
}
