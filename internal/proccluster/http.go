package proccluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The few HTTP calls a Cluster makes to tell whether its agents serve.
// Plain JSON over net/http: both Consul and tenure answer them alike.

// No connection is kept open: it would count among a server's open files,
// which bench-scale measures.
var httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// call sends one request to the agent at addr (host:port) and decodes a
// 200 answer's JSON into out (when out is not nil).
func call(method, addr, path, body string, out any) error {
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w in %q", method, path, err, b)
	}
	return nil
}

// leaderOf is the raft address of the leader the agent at addr knows, ""
// for none yet.
func leaderOf(addr string) (string, error) {
	var leader string
	err := call(http.MethodGet, addr, "/v1/status/leader", "", &leader)
	return leader, err
}

// serves reports, as an error, what keeps the agent at addr, called node,
// from serving a cluster of the named nodes: its own view (stale reads)
// must list every node and its own serfHealth passing, and a session must
// be creatable through it (Consul refuses one until the leader has
// registered the node with serfHealth passing).
func serves(addr, node string, nodes []string) error {
	var catalog []struct{ Node string }
	if err := call(http.MethodGet, addr, "/v1/catalog/nodes?stale", "", &catalog); err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, n := range catalog {
		listed[n.Node] = true
	}
	for _, n := range nodes {
		if !listed[n] {
			return fmt.Errorf("%s does not list node %s yet", node, n)
		}
	}
	var checks []struct{ CheckID, Status string }
	if err := call(http.MethodGet, addr, "/v1/health/node/"+node+"?stale", "", &checks); err != nil {
		return err
	}
	passing := false
	for _, c := range checks {
		passing = passing || c.CheckID == "serfHealth" && c.Status == "passing"
	}
	if !passing {
		return fmt.Errorf("serfHealth of %s not passing: %+v", node, checks)
	}
	var session struct{ ID string }
	if err := call(http.MethodPut, addr, "/v1/session/create", `{"Name":"proccluster-ready"}`, &session); err != nil {
		return err
	}
	return call(http.MethodPut, addr, "/v1/session/destroy/"+session.ID, "", nil)
}
