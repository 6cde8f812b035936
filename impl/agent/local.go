package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// localAgent is an agent's own services and checks (impl/internal/local) with the
// anti-entropy loop that copies them to the catalog.
type localAgent struct {
	la     *local.Agent
	cancel context.CancelFunc // ends the loop
	done   chan struct{}      // closed when the loop has ended
}

// startLocal builds the local agent of node, restores what its data
// directory (cfg.DataDir) kept, and starts its loop once ready closes (or
// ctx ends first). cfg's random and periodic parts (Stagger,
// Sync.Stagger, Sync.Interval…) are the caller's, so the simulator can pass
// seeded ones. On error nothing is left running.
func startLocal(ctx context.Context, cfg local.Config, node, nodeAddr string, fwd rpc.Forwarder, tokens ownTokens,
	servers func() []string, pool *gossip.Pool, ready <-chan struct{}, log hclog.Logger) (*localAgent, error) {
	cfg.Node = node
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	if cfg.Sync.ClusterSize == nil && pool != nil {
		cfg.Sync.ClusterSize = func() int { return len(pool.List()) }
	}
	if cfg.Sync.OnError == nil {
		cfg.Sync.OnError = func(err error) { log.Warn("anti-entropy sync failed", "error", err) }
	}
	if cfg.Sync.OnDenied == nil {
		// Consul's agent logs each write its token may not make, and
		// tries it again only at the next full sync.
		cfg.Sync.OnDenied = func(what string, err error) {
			log.Warn("anti-entropy write blocked by ACLs", "write", what, "error", err)
		}
	}
	if cfg.Sync.RegisterToken == nil {
		cfg.Sync.RegisterToken = tokens.registration
	}
	cat := &apiCatalog{node: node, address: nodeAddr, fwd: fwd, servers: servers, tokens: tokens,
		timeout: catalogTimeout}
	la := local.NewAgent(cfg, cat)
	cat.local = la.State
	if err := la.Restore(); err != nil {
		la.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &localAgent{la: la, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		la.Run(ctx)
	}()
	return l, nil
}

// serverUp relays the gossip pool's new-leader and server-join notices
// (gossip.Config.ServerUp) to the local agent's anti-entropy, once the
// agent exists: the pool starts first.
type serverUp struct{ la atomic.Pointer[local.Agent] }

func (s *serverUp) notify() {
	if la := s.la.Load(); la != nil {
		la.NoteServerUp()
	}
}

// halt ends anti-entropy for good, the loop and the syncs the HTTP API
// makes after a registration alike: a catalog write under way has been
// answered when it returns, and no other will be sent. Safe to call more
// than once.
func (l *localAgent) halt() {
	l.la.Syncer().Halt()
	l.cancel()
	<-l.done
}

// stop ends the loop and stops the checks.
func (l *localAgent) stop() {
	l.halt()
	l.la.Close()
}

// serverKnown closes the returned channel once servers lists one, looking
// every poll: a client agent's first full sync has nowhere to go before.
func serverKnown(ctx context.Context, servers func() []string, poll time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for len(servers()) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
		}
	}()
	return ch
}

// gossipServers lists where the alive servers in pool take forwarded
// requests (addr: default their server ports, Member.RaftAddr),
// sorted and then rotated by a hash of node: gossip lists members in no
// fixed order, and a fixed one keeps simulated runs reproducible, while the
// rotation spreads clients over the servers.
func gossipServers(pool *gossip.Pool, node string, addr func(gossip.Member) string) []string {
	var out []string
	for _, m := range pool.List() {
		if m.Server && m.SerfStatus == 1 {
			if a := addr(m); a != "" {
				out = append(out, a)
			}
		}
	}
	if len(out) < 2 {
		return out
	}
	slices.Sort(out)
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	k := int(h.Sum32() % uint32(len(out)))
	return append(out[k:], out[:k]...)
}
