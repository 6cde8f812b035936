package proccluster

import (
	"fmt"
	"net"
	"strconv"
)

// host is the one address agents bind, serve and gossip on.
const host = "127.0.0.1"

// Ports are an agent's three listeners on host. Consul's other listeners
// (DNS, gRPC, HTTPS, WAN gossip) are turned off by Agent.args, so agents
// side by side do not clash on their default ports.
type Ports struct {
	http    int
	serfLAN int // gossip, TCP and UDP
	server  int // raft and RPC: the address /v1/status/leader names
}

// HTTPAddr is the agent's HTTP API, host:port.
func (p Ports) HTTPAddr() string { return hostPort(p.http) }

// serfAddr is the agent's gossip address, host:port, which others join.
func (p Ports) serfAddr() string { return hostPort(p.serfLAN) }

// serverAddr is the server's raft address, host:port.
func (p Ports) serverAddr() string { return hostPort(p.server) }

func hostPort(port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// FreePorts returns three TCP ports on host for one agent that were free a
// moment ago; they are held open together, so none is handed out twice.
// Another process may take one before the agent does: Up and the
// conformance suite start an agent that exits at once again on fresh ports.
func FreePorts() (Ports, error) {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	var ports [3]int
	for i := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return Ports{}, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return Ports{http: ports[0], serfLAN: ports[1], server: ports[2]}, nil
}

// Agent is one agent's command line in Consul's flags. The zero value of a
// field leaves the binary's default.
type Agent struct {
	Node    string
	DataDir string // not used with dev
	Ports   Ports

	// dev is one in-memory server that leads at once (consul agent -dev).
	dev bool
	// server is a server; it waits for bootstrapExpect servers (counting
	// itself) before the first election. Without server or dev the agent
	// is a client agent.
	server          bool
	bootstrapExpect int

	// RetryJoin are gossip addresses (host:port) joined at start, and
	// again every second until one answers.
	RetryJoin  []string
	Datacenter string
	logLevel   string
	// Extra are more flags, given last, e.g. Consul's -hcl.
	Extra []string
}

// args is the agent's command line, "agent" first.
func (a Agent) args() []string {
	args := []string{"agent"}
	switch {
	case a.dev:
		args = append(args, "-dev")
	case a.server:
		args = append(args, "-server")
		if a.bootstrapExpect > 0 {
			args = append(args, "-bootstrap-expect", strconv.Itoa(a.bootstrapExpect))
		}
	}
	args = append(args, "-node", a.Node)
	if !a.dev {
		args = append(args, "-data-dir", a.DataDir)
	}
	args = append(args, "-bind", host, "-client", host,
		"-http-port", strconv.Itoa(a.Ports.http), "-serf-lan-port", strconv.Itoa(a.Ports.serfLAN),
		"-server-port", strconv.Itoa(a.Ports.server),
		// Consul listens on these by default; tenure has none of them and
		// takes -1 (off) for each.
		"-dns-port=-1", "-grpc-port=-1", "-grpc-tls-port=-1", "-serf-wan-port=-1", "-https-port=-1")
	for _, j := range a.RetryJoin {
		args = append(args, "-retry-join", j)
	}
	if len(a.RetryJoin) > 0 {
		// Consul's default is 30s: an agent started before the one it joins
		// would sit alone that long.
		args = append(args, "-retry-interval", "1s")
	}
	if a.Datacenter != "" {
		args = append(args, "-datacenter", a.Datacenter)
	}
	if a.logLevel != "" {
		args = append(args, "-log-level", a.logLevel)
	}
	return append(args, a.Extra...)
}
