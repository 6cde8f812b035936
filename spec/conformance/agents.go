package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// Client agents of a case's own (S53). What gossip does when a member
// fails, leaves or is force-left can only be watched with a member that
// the case may kill, so these cases start client agents from Options.Agent
// and join them to the LAN pool of the server under test. The binary must
// be of the server's kind (gossip pools of different implementations need
// not interoperate) and take Consul's agent flags, which tenure's do.

// clientAgent is a client agent process started by caseT.StartAgent.
type clientAgent struct {
	Node string // its node name, unique to the run and case
	HTTP string // base URL of its HTTP API

	t    *caseT
	proc *proccluster.Proc
}

// agentJoinTimeout bounds how long a started agent may take to be
// registered by the leader with serfHealth passing.
const agentJoinTimeout = 60 * time.Second

// StartAgent starts a client agent named after name, joined to the server's
// gossip pool, and waits until the leader has registered its node with
// serfHealth passing (the alive-member rule of S53). extra are more agent
// flags (Consul's). It is killed, force-left and deregistered after the case.
func (t *caseT) StartAgent(name string, extra ...string) *clientAgent {
	join, dc := t.poolAddr()
	node := t.agentNode(name)
	// The free ports are only free when found: an agent that exits at once
	// (most likely a port taken meanwhile, gossip's UDP one included) is
	// started again on fresh ones.
	const attempts = 3
	for try := 1; ; try++ {
		a := t.startAgentOnce(node, join, dc, extra)
		if t.awaitRegistered(a) {
			return a
		}
		if try == attempts {
			t.Fatalf("agent %s exited while starting, %d times; its output ends:\n%s", node, attempts, a.proc.Output())
		}
		t.Logf("agent %s exited while starting (attempt %d); its output ends:\n%s", node, try, a.proc.Output())
	}
}

// StartLoneAgent starts a client agent named after name that joins no pool,
// and returns once its HTTP API answers. Join joins it to the server's pool
// later. It is killed, force-left and deregistered after the case.
func (t *caseT) StartLoneAgent(name string, extra ...string) *clientAgent {
	_, dc := t.poolAddr()
	node := t.agentNode(name)
	const attempts = 3
	for try := 1; ; try++ {
		a := t.startAgentOnce(node, "", dc, extra)
		if a.awaitHTTP() {
			return a
		}
		if try == attempts {
			t.Fatalf("agent %s exited while starting, %d times; its output ends:\n%s", node, attempts, a.proc.Output())
		}
		t.Logf("agent %s exited while starting (attempt %d); its output ends:\n%s", node, try, a.proc.Output())
	}
}

// poolAddr is the gossip address of the server under test, which agents
// join, and its datacenter.
func (t *caseT) poolAddr() (join, dc string) {
	if t.env.agentBin == "" {
		t.Skipf("no agent binary (-agent)")
	}
	r := t.Do(http.MethodGet, "/v1/agent/self", nil)
	t.Require(r.Code == 200, "agent self: want 200, got %s", r)
	var self struct {
		Config struct{ Datacenter string }
		Member struct {
			Addr string
			Port int
		}
	}
	t.decode("agent self", r, &self)
	t.Require(self.Member.Addr != "" && self.Member.Port > 0, "agent self names no gossip address: %s", r)
	return net.JoinHostPort(self.Member.Addr, strconv.Itoa(self.Member.Port)), self.Config.Datacenter
}

// agentNode is the node name of the case's agent called name, unique to the
// run and case.
func (t *caseT) agentNode(name string) string {
	return fmt.Sprintf("conf-%s-%d-%s", t.env.runID, t.seq, name)
}

// awaitHTTP waits until a's HTTP API answers; it reports false if a's
// process ended first.
func (a *clientAgent) awaitHTTP() bool {
	deadline := time.Now().Add(agentJoinTimeout)
	for {
		res, err := a.t.env.http.Get(a.HTTP + "/v1/agent/self")
		if err == nil {
			_ = res.Body.Close()
			return true
		}
		if !a.proc.Running() {
			return false
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("agent %s did not serve HTTP within %v: %v; its output ends:\n%s", a.Node, agentJoinTimeout, err, a.proc.Output())
		}
		a.t.Sleep(50 * time.Millisecond)
	}
}

// awaitRegistered waits until the leader has registered a's node with
// serfHealth passing; it reports false if a's process ended first.
func (t *caseT) awaitRegistered(a *clientAgent) bool {
	deadline := time.Now().Add(agentJoinTimeout)
	for {
		if serf := t.NodeChecks(a.Node)["serfHealth"]; serf != nil && serf.Status == "passing" {
			t.Equal("serfHealth name of agent "+a.Node, serf.Name, "Serf Health Status")
			return true
		}
		if !a.proc.Running() {
			return false
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s was not registered with serfHealth passing within %v; its output ends:\n%s",
				a.Node, agentJoinTimeout, a.proc.Output())
		}
		t.Sleep(100 * time.Millisecond)
	}
}

// startAgentOnce starts the agent process on fresh ports (a client agent,
// unless extra makes it a server) and registers its cleanup.
func (t *caseT) startAgentOnce(node, join, dc string, extra []string) *clientAgent {
	dir, err := os.MkdirTemp("", "conformance-agent-")
	if err != nil {
		t.Fatalf("agent data dir: %v", err)
	}
	ports, err := proccluster.FreePorts()
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("agent %s: %v", node, err)
	}
	cmdLine := proccluster.Agent{Node: node, DataDir: dir, Ports: ports, Datacenter: dc, Extra: extra}
	if join != "" {
		cmdLine.RetryJoin = []string{join}
	}
	// Not tied to the case's context: a timed-out case must still be able
	// to force-leave the agent in its cleanup before the process goes. Its
	// output is kept in memory, for the failure messages.
	proc, err := proccluster.Start(t.env.agentBin, cmdLine, "")
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("%v", err)
	}
	a := &clientAgent{Node: node, HTTP: "http://" + ports.HTTPAddr(), t: t, proc: proc}
	t.Cleanup(func(ctx context.Context) error {
		// The process first, then its membership: a force-left member that
		// is still alive would refute the leave and stay registered. Its
		// exit status says nothing: cases kill it.
		_ = a.proc.Kill()
		_ = os.RemoveAll(dir)
		// Both may fail harmlessly: the member may be gone from the pool
		// already (Consul answers 500 for an unknown node), and the node
		// from the catalog.
		_, _ = t.env.do(ctx, http.MethodPut, "/v1/agent/force-leave/"+url.PathEscape(node)+"?prune", nil)
		b, _ := json.Marshal(map[string]any{"Node": node})
		_, err := t.env.do(ctx, http.MethodPut, "/v1/catalog/deregister", b)
		return err
	})
	return a
}

// Kill ends the agent's process with SIGKILL: it stops answering gossip
// without leaving, so the pool declares it failed.
func (a *clientAgent) Kill() {
	if err := a.proc.Kill(); err != nil {
		a.t.Fatalf("%v", err)
	}
}

// Leave asks the agent over its own HTTP API to leave the pool gracefully
// (it then shuts down).
func (a *clientAgent) Leave() {
	r := a.Do(http.MethodPut, "/v1/agent/leave")
	a.t.Require(r.Code == 200, "leave %s: want 200, got %s", a.Node, r)
}

// join asks the agent over its own HTTP API to join the gossip pool at
// addr. Unlike Do it reports failure instead of ending the case, so it may
// run beside a request the case is waiting on.
func (a *clientAgent) join(addr string) error {
	ctx, cancel := context.WithTimeout(a.t.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, a.HTTP+"/v1/agent/join/"+url.PathEscape(addr), nil)
	if err != nil {
		return fmt.Errorf("join request: %w", err)
	}
	if a.t.env.token != "" {
		req.Header.Set("X-Consul-Token", a.t.env.token)
	}
	res, err := a.t.env.http.Do(req)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		return fmt.Errorf("join: %d %s", res.StatusCode, b)
	}
	return nil
}

// Do sends a request without a body to the agent's own HTTP API.
func (a *clientAgent) Do(method, path string) *resp {
	ctx, cancel := context.WithTimeout(a.t.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.HTTP+path, nil)
	if err != nil {
		a.t.Fatalf("%s %s on agent %s: %v", method, path, a.Node, err)
	}
	if a.t.env.token != "" {
		req.Header.Set("X-Consul-Token", a.t.env.token)
	}
	res, err := a.t.env.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s on agent %s: %v", method, path, a.Node, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatalf("%s %s on agent %s: read body: %v", method, path, a.Node, err)
	}
	return &resp{Code: res.StatusCode, Header: res.Header, Body: b}
}
