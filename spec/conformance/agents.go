package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Client agents of a case's own (S53). What gossip does when a member
// fails, leaves or is force-left can only be watched with a member that
// the case may kill, so these cases start client agents from Options.Agent
// and join them to the LAN pool of the server under test. The binary must
// be of the server's kind (gossip pools of different implementations need
// not interoperate) and take Consul's agent flags, which tenure's do.

// Agent is a client agent process started by T.StartAgent.
type Agent struct {
	Node string // its node name, unique to the run and case
	HTTP string // base URL of its HTTP API

	t      *T
	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed when the process has ended
}

// agentJoinTimeout bounds how long a started agent may take to be
// registered by the leader with serfHealth passing.
const agentJoinTimeout = 60 * time.Second

// StartAgent starts a client agent named after name, joined to the server's
// gossip pool, and waits until the leader has registered its node with
// serfHealth passing (the alive-member rule of S53). extra are more agent
// flags (Consul's). It is killed, force-left and deregistered after the case.
func (t *T) StartAgent(name string, extra ...string) *Agent {
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
			t.Fatalf("agent %s exited while starting, %d times; its output ends:\n%s", node, attempts, a.out.String())
		}
		t.Logf("agent %s exited while starting (attempt %d); its output ends:\n%s", node, try, a.out.String())
	}
}

// StartLoneAgent starts a client agent named after name that joins no pool,
// and returns once its HTTP API answers. Join joins it to the server's pool
// later. It is killed, force-left and deregistered after the case.
func (t *T) StartLoneAgent(name string, extra ...string) *Agent {
	_, dc := t.poolAddr()
	node := t.agentNode(name)
	const attempts = 3
	for try := 1; ; try++ {
		a := t.startAgentOnce(node, "", dc, extra)
		if a.awaitHTTP() {
			return a
		}
		if try == attempts {
			t.Fatalf("agent %s exited while starting, %d times; its output ends:\n%s", node, attempts, a.out.String())
		}
		t.Logf("agent %s exited while starting (attempt %d); its output ends:\n%s", node, try, a.out.String())
	}
}

// poolAddr is the gossip address of the server under test, which agents
// join, and its datacenter.
func (t *T) poolAddr() (join, dc string) {
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
func (t *T) agentNode(name string) string {
	return fmt.Sprintf("conf-%s-%d-%s", t.env.runID, t.seq, name)
}

// awaitHTTP waits until a's HTTP API answers; it reports false if a's
// process ended first.
func (a *Agent) awaitHTTP() bool {
	deadline := time.Now().Add(agentJoinTimeout)
	for {
		res, err := a.t.env.http.Get(a.HTTP + "/v1/agent/self")
		if err == nil {
			_ = res.Body.Close()
			return true
		}
		select {
		case <-a.exited:
			return false
		default:
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("agent %s did not serve HTTP within %v: %v; its output ends:\n%s", a.Node, agentJoinTimeout, err, a.out.String())
		}
		a.t.Sleep(50 * time.Millisecond)
	}
}

// awaitRegistered waits until the leader has registered a's node with
// serfHealth passing; it reports false if a's process ended first.
func (t *T) awaitRegistered(a *Agent) bool {
	deadline := time.Now().Add(agentJoinTimeout)
	for {
		if serf := t.NodeChecks(a.Node)["serfHealth"]; serf != nil && serf.Status == "passing" {
			t.Equal("serfHealth name of agent "+a.Node, serf.Name, "Serf Health Status")
			return true
		}
		select {
		case <-a.exited:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s was not registered with serfHealth passing within %v; its output ends:\n%s",
				a.Node, agentJoinTimeout, a.out.String())
		}
		t.Sleep(100 * time.Millisecond)
	}
}

// startAgentOnce starts the agent process on fresh ports and registers its
// cleanup.
func (t *T) startAgentOnce(node, join, dc string, extra []string) *Agent {
	dir, err := os.MkdirTemp("", "conformance-agent-")
	if err != nil {
		t.Fatalf("agent data dir: %v", err)
	}
	a := &Agent{Node: node, t: t, out: &tailBuffer{max: 16 << 10}, exited: make(chan struct{})}
	httpPort, serfPort, serverPort := freePort(t), freePort(t), freePort(t)
	a.HTTP = "http://127.0.0.1:" + httpPort
	args := []string{"agent", "-node", node, "-data-dir", dir, "-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-http-port", httpPort, "-serf-lan-port", serfPort, "-server-port", serverPort,
		"-dns-port=-1", "-grpc-port=-1", "-grpc-tls-port=-1", "-serf-wan-port=-1", "-https-port=-1"}
	if join != "" {
		args = append(args, "-retry-join", join, "-retry-interval", "1s")
	}
	if dc != "" {
		args = append(args, "-datacenter", dc)
	}
	args = append(args, extra...)
	// Not tied to the case's context: a timed-out case must still be able
	// to force-leave the agent in its cleanup before the process goes.
	a.cmd = exec.Command(t.env.agentBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("start agent %s: %v", t.env.agentBin, err)
	}
	go func() {
		_ = a.cmd.Wait() // its exit status says nothing: cases kill it
		close(a.exited)
	}()
	t.Cleanup(func(ctx context.Context) error {
		// The process first, then its membership: a force-left member that
		// is still alive would refute the leave and stay registered.
		_ = a.cmd.Process.Signal(syscall.SIGCONT)
		_ = a.cmd.Process.Kill()
		<-a.exited
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
func (a *Agent) Kill() {
	if err := a.cmd.Process.Kill(); err != nil {
		a.t.Fatalf("kill agent %s: %v", a.Node, err)
	}
}

// Leave asks the agent over its own HTTP API to leave the pool gracefully
// (it then shuts down).
func (a *Agent) Leave() {
	r := a.Do(http.MethodPut, "/v1/agent/leave")
	a.t.Require(r.Code == 200, "leave %s: want 200, got %s", a.Node, r)
}

// join asks the agent over its own HTTP API to join the gossip pool at
// addr. Unlike Do it reports failure instead of ending the case, so it may
// run beside a request the case is waiting on.
func (a *Agent) join(addr string) error {
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
func (a *Agent) Do(method, path string) *resp {
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

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	_, p, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	return p
}

// tailBuffer keeps the last max bytes written to it, for failure messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
