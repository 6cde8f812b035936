package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl"
	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/model"
)

const agentUsage = `usage:
  tenure agent -dev [-http-addr 127.0.0.1:8500] [-node NAME]
  tenure agent -server -node n1 -data-dir DIR -raft-addr HOST:PORT -http-addr HOST:PORT \
               -peers n1=HOST:PORT,n2=HOST:PORT,n3=HOST:PORT

-dev runs one in-memory node that bootstraps itself, like consul agent -dev.

-server runs one member of a cluster. Start every member with the same
-peers list (every member's node name and raft address, itself included): a
member whose -data-dir holds no raft state bootstraps exactly that list, so
this is the equivalent of Consul's -bootstrap-expect N. Later restarts reuse
the stored state and ignore -peers. Membership is static.

flags:
`

// agentFlags are the parsed flags of `tenure agent`.
type agentFlags struct {
	dev, server      bool
	node, dataDir    string
	raftAddr, http   string
	peers            []impl.Peer
	logLevel         string
	ttlMultiplier    float64
	failureThreshold time.Duration
}

func parseAgentFlags(args []string, stderr io.Writer) (agentFlags, error) {
	var f agentFlags
	var peers string
	fs := flag.NewFlagSet("tenure agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, agentUsage)
		fs.PrintDefaults()
	}
	fs.BoolVar(&f.dev, "dev", false, "run a single in-memory dev node")
	fs.BoolVar(&f.server, "server", false, "run a cluster member (needs -node, -data-dir, -raft-addr, -peers)")
	fs.StringVar(&f.node, "node", "", "node name (default: the host name in -dev)")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory for the raft log and snapshots")
	fs.StringVar(&f.raftAddr, "raft-addr", "", "host:port for raft traffic (also advertised to peers)")
	fs.StringVar(&f.http, "http-addr", "127.0.0.1:8500", "host:port of the HTTP API (also advertised to peers)")
	fs.StringVar(&peers, "peers", "", "every member as name=raft-host:port, comma-separated")
	fs.StringVar(&f.logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.Float64Var(&f.ttlMultiplier, "ttl-multiplier", model.DefaultTTLMultiplier, "session TTL grace factor, at least 1")
	fs.DurationVar(&f.failureThreshold, "failure-threshold", 5*time.Second,
		"how long raft heartbeats to a peer must fail before the leader marks its serfHealth critical")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if hclog.LevelFromString(f.logLevel) == hclog.NoLevel {
		return f, fmt.Errorf("unknown -log-level %q", f.logLevel)
	}
	switch {
	case f.dev == f.server:
		return f, errors.New("give exactly one of -dev and -server")
	case f.dev:
		if f.dataDir != "" || f.raftAddr != "" || peers != "" {
			return f, errors.New("-dev keeps everything in memory: -data-dir, -raft-addr and -peers do not apply")
		}
		if f.node == "" {
			f.node, _ = os.Hostname()
		}
		if f.node == "" {
			f.node = "dev"
		}
	default:
		if f.node == "" || f.dataDir == "" || f.raftAddr == "" || peers == "" {
			return f, errors.New("-server needs -node, -data-dir, -raft-addr and -peers")
		}
		var err error
		if f.peers, err = parsePeers(peers); err != nil {
			return f, err
		}
	}
	return f, nil
}

// parsePeers reads "n1=host:port,n2=host:port".
func parsePeers(s string) ([]impl.Peer, error) {
	var out []impl.Peer
	for _, item := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("-peers: %q is not name=host:port", item)
		}
		out = append(out, impl.Peer{Name: name, RaftAddr: addr})
	}
	return out, nil
}

func runAgent(args []string, stderr io.Writer) int {
	f, err := parseAgentFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "tenure agent: %v\n", err)
		return 2
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "tenure", Level: hclog.LevelFromString(f.logLevel), Output: stderr})
	a, err := agent.New(agent.Config{Server: impl.Config{
		NodeName: f.node, HTTPAddr: f.http, Logger: logger, Dev: f.dev, DataDir: f.dataDir,
		RaftAddr: f.raftAddr, Peers: f.peers, TTLMultiplier: f.ttlMultiplier,
		FailureThreshold: f.failureThreshold,
	}})
	if err != nil {
		logger.Error("start failed", "error", err)
		return 1
	}
	logger.Info("agent running", "node", f.node, "http", a.HTTPAddr(), "dev", f.dev)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	s := <-sig
	signal.Stop(sig)
	logger.Info("shutting down", "signal", s.String())
	if err := a.Shutdown(); err != nil {
		logger.Error("shutdown", "error", err)
		return 1
	}
	return 0
}
