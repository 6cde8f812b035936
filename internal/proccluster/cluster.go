package proccluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// TB is what a Cluster needs of its test; testing.TB has it all. (This
// package does not import testing: the conformance suite, which is part of
// the tenure binary, uses Start.)
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	Failed() bool
}

const (
	// readyTimeout bounds how long an agent may take to serve after its
	// start: a cold Consul server takes some seconds to elect and register.
	readyTimeout = 90 * time.Second
	// eventuallyTimeout bounds Eventually and Leader.
	eventuallyTimeout = 30 * time.Second
	// startAttempts is how many fresh clusters Up tries.
	startAttempts = 3
	pollPause     = 10 * time.Millisecond
)

// Options lay a cluster out. The zero value is three servers at the
// binary's default log level.
type Options struct {
	// Name names the system in messages and directories, e.g. "tenure"
	// or "Consul"; default: the binary's file name.
	Name     string
	servers  int // default 3; -bootstrap-expect is their number
	Clients  int // client agents, joined to the servers
	LogLevel string
	Flags    []string // more flags for every agent, e.g. Consul's -hcl
	// DataIn is the directory the data directories go into (default: the
	// system's temporary directory), e.g. the filesystem a benchmark
	// probes.
	DataIn string
}

// Cluster is servers that find each other by -retry-join and elect a
// leader once all are in (-bootstrap-expect), and client agents joined to
// them, as processes of one binary. Nodes keep their ports and data
// directories across Kill and Start, as a restarted machine does. Its
// methods are for the test's goroutine; a failure ends the test.
type Cluster struct {
	name  string
	bin   string
	Nodes []*Node // servers s1, s2, … first, then clients c1, c2, …
	// LogDir holds each node's log, <node>.log. Close removes it unless
	// the test failed (or the cluster never came up).
	LogDir string

	t        TB
	dataDir  string
	keepLogs bool // the cluster did not come up: its logs are named in the failure
	closed   bool
}

// Node is one agent of a Cluster.
type Node struct {
	agent   Agent  // its command line
	LogPath string // its log, across restarts
	Proc    *Proc  // its latest process; nil before the first Start
}

// Name is the node's name.
func (n *Node) Name() string { return n.agent.Node }

// HTTPAddr is the node's HTTP API, host:port.
func (n *Node) HTTPAddr() string { return n.agent.Ports.HTTPAddr() }

// Running reports whether the node's process was started and has not ended.
func (n *Node) Running() bool { return n.Proc != nil && n.Proc.Running() }

// Up starts a cluster laid out by o on bin and returns once every agent
// serves (see WaitReady). A cluster that does not come up, most likely
// because a free port was taken meanwhile, is tried again from scratch on
// fresh ports; the logs of the failed one are kept and named.
func Up(t TB, bin string, o Options) *Cluster {
	t.Helper()
	for try := 1; ; try++ {
		c := newCluster(t, bin, o)
		err := c.up()
		if err == nil {
			return c
		}
		c.keepLogs = true
		c.Close()
		if try == startAttempts {
			t.Fatalf("%s cluster did not come up, %d times; the last time: %v", c.name, try, err)
		}
		t.Logf("%s cluster did not come up (attempt %d), trying again on fresh ports: %v", c.name, try, err)
	}
}

func (c *Cluster) up() error {
	for i := range c.Nodes {
		if err := c.start(i); err != nil {
			return err
		}
	}
	for i := range c.Nodes {
		if err := c.ready(i); err != nil {
			return err
		}
	}
	return nil
}

// newCluster lays out a cluster (ports, directories, command lines) and
// starts nothing; Close, registered with t, kills what runs when the test
// ends.
func newCluster(t TB, bin string, o Options) *Cluster {
	t.Helper()
	name := o.Name
	if name == "" {
		name = filepath.Base(bin)
	}
	servers := o.servers
	if servers == 0 {
		servers = 3
	}
	logDir, err := os.MkdirTemp("", name+"-logs-")
	if err != nil {
		t.Fatalf("%s cluster: log directory: %v", name, err)
	}
	dataDir, err := os.MkdirTemp(o.DataIn, name+"-data-")
	if err != nil {
		_ = os.RemoveAll(logDir)
		t.Fatalf("%s cluster: data directory: %v", name, err)
	}
	c := &Cluster{name: name, bin: bin, LogDir: logDir, t: t, dataDir: dataDir}
	t.Cleanup(c.Close)
	for i := range servers + o.Clients {
		ports, err := FreePorts()
		if err != nil {
			t.Fatalf("%s cluster: %v", name, err)
		}
		node := fmt.Sprintf("s%d", i+1)
		if i >= servers {
			node = fmt.Sprintf("c%d", i-servers+1)
		}
		c.Nodes = append(c.Nodes, &Node{
			agent: Agent{Node: node, DataDir: filepath.Join(dataDir, node), Ports: ports,
				server: i < servers, bootstrapExpect: servers, logLevel: o.LogLevel, Extra: o.Flags},
			LogPath: filepath.Join(logDir, node+".log"),
		})
	}
	// Every agent retry-joins every server but itself, so that any one of
	// them may be down when another starts.
	for _, nd := range c.Nodes {
		for _, s := range c.Nodes[:servers] {
			if s != nd {
				nd.agent.RetryJoin = append(nd.agent.RetryJoin, s.agent.Ports.serfAddr())
			}
		}
		if !nd.agent.server {
			nd.agent.bootstrapExpect = 0
		}
	}
	return c
}

// Start starts node i's process, on its ports and data directory.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatalf("%v", err)
	}
}

func (c *Cluster) start(i int) error {
	nd := c.Nodes[i]
	if nd.Running() {
		return fmt.Errorf("%s %s is running already", c.name, nd.Name())
	}
	p, err := Start(c.bin, nd.agent, nd.LogPath)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	nd.Proc = p
	return nil
}

// Kill kills node i's process with SIGKILL, as a crash would.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	if err := c.proc(i).Kill(); err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
}

// Stop stops node i's process with SIGTERM; an unclean exit fails the
// test.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	if err := c.proc(i).stop(); err != nil {
		c.t.Errorf("%s: %v", c.name, err)
	}
}

// proc is node i's latest process; a node never started fails the test.
func (c *Cluster) proc(i int) *Proc {
	c.t.Helper()
	if c.Nodes[i].Proc == nil {
		c.t.Fatalf("%s %s was never started", c.name, c.Nodes[i].Name())
	}
	return c.Nodes[i].Proc
}

// WaitReady waits until node i serves: it knows a leader among the
// running servers, its own view lists every node of the cluster with its
// own serfHealth passing, and a session can be created through it. Its
// process ending meanwhile (a data directory it cannot open, a port
// taken) fails the test at once, with the end of its log.
func (c *Cluster) WaitReady(i int) {
	c.t.Helper()
	if err := c.ready(i); err != nil {
		c.t.Fatalf("%v", err)
	}
}

func (c *Cluster) ready(i int) error {
	nd := c.Nodes[i]
	if nd.Proc == nil {
		return fmt.Errorf("%s %s was never started", c.name, nd.Name())
	}
	var names []string
	for _, o := range c.Nodes {
		names = append(names, o.Name())
	}
	err := poll(readyTimeout, nd.Proc.done(), func() error {
		leader, err := leaderOf(nd.HTTPAddr())
		if err != nil {
			return err
		}
		if c.serverAt(leader) < 0 {
			return fmt.Errorf("%s knows no leader among the running servers (it names %q)", nd.Name(), leader)
		}
		return serves(nd.HTTPAddr(), nd.Name(), names)
	})
	switch {
	case err == nil:
		return nil
	case !nd.Running():
		return fmt.Errorf("%s %s exited while starting (%v); its log ends:\n%s", c.name, nd.Name(), nd.Proc.Wait(), nd.Proc.Output())
	default:
		return fmt.Errorf("%s %s not serving after %v: %w (logs in %s)", c.name, nd.Name(), readyTimeout, err, c.LogDir)
	}
}

// serverAt is the index of the running server whose raft address is addr,
// -1 for none.
func (c *Cluster) serverAt(addr string) int {
	for i, nd := range c.Nodes {
		if nd.agent.server && nd.Running() && nd.agent.Ports.serverAddr() == addr {
			return i
		}
	}
	return -1
}

// Leader asks node via, until it names a running server, and returns that
// server's index.
func (c *Cluster) Leader(via int) int {
	c.t.Helper()
	lead := -1
	c.Eventually("a leader known to "+c.Nodes[via].Name(), func() error {
		addr, err := leaderOf(c.Nodes[via].HTTPAddr())
		if err != nil {
			return err
		}
		if lead = c.serverAt(addr); lead < 0 {
			return fmt.Errorf("leader %q is not a running server", addr)
		}
		return nil
	})
	return lead
}

// Eventually calls cond until it returns nil, and fails the test with its
// last error if that takes longer than 30 seconds.
func (c *Cluster) Eventually(what string, cond func() error) {
	c.t.Helper()
	if err := Poll(eventuallyTimeout, cond); err != nil {
		c.t.Fatalf("%s: timed out waiting for %s: %v", c.name, what, err)
	}
}

// Close kills every process still running and removes the data
// directories. When the test has failed it logs the end of each node's
// log, and keeps and names LogDir. Later calls do nothing.
func (c *Cluster) Close() {
	if c.closed {
		return
	}
	c.closed = true
	for _, nd := range c.Nodes {
		if nd.Proc != nil {
			if err := nd.Proc.Kill(); err != nil {
				c.t.Errorf("%s: %v", c.name, err)
			}
		}
	}
	_ = os.RemoveAll(c.dataDir)
	failed := c.t.Failed()
	if failed {
		for _, nd := range c.Nodes {
			if nd.Proc != nil {
				c.t.Logf("%s %s: its log ends:\n%s", c.name, nd.Name(), nd.Proc.Output())
			}
		}
	}
	if failed || c.keepLogs {
		c.t.Logf("%s logs kept in %s", c.name, c.LogDir)
		return
	}
	_ = os.RemoveAll(c.LogDir)
}

// Poll calls cond every 10 ms until it returns nil or limit passes, and
// returns its last error.
func Poll(limit time.Duration, cond func() error) error { return poll(limit, nil, cond) }

// poll is Poll that also gives up, with cond's last error, once stop is
// closed.
func poll(limit time.Duration, stop <-chan struct{}, cond func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-stop:
			return err
		case <-time.After(pollPause):
		}
	}
}
