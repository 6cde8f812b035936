package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// CoordinateConfig is how an agent sends its network coordinate to the
// servers (S89), under Consul's names.
type CoordinateConfig struct {
	// Disable is disable_coordinates: nothing is sent, and the coordinate
	// endpoints answer 401.
	Disable bool
	// IntervalMin is sync_coordinate_interval_min (default 15 s) and
	// RateTarget sync_coordinate_rate_target (default 64 updates a
	// second over the whole cluster): an agent sends every
	// max(IntervalMin, members/RateTarget), plus a random stagger of up to
	// as much again.
	IntervalMin time.Duration
	RateTarget  float64
	// Stagger returns the random part of a wait in [0, d); default
	// math/rand. The simulator, which turns sending off, would pass a
	// seeded one.
	Stagger func(d time.Duration) time.Duration
}

// Consul's defaults.
const (
	defaultCoordinateIntervalMin = 15 * time.Second
	defaultCoordinateRateTarget  = 64.0
)

func (c CoordinateConfig) withDefaults() CoordinateConfig {
	if c.IntervalMin <= 0 {
		c.IntervalMin = defaultCoordinateIntervalMin
	}
	if c.RateTarget <= 0 {
		c.RateTarget = defaultCoordinateRateTarget
	}
	if c.Stagger == nil {
		c.Stagger = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	return c
}

// interval is the wait before the next send in a cluster of n members:
// the interval that keeps the cluster's updates at RateTarget, at least
// IntervalMin, plus the stagger.
func (c CoordinateConfig) interval(n int) time.Duration {
	d := time.Duration(float64(n) / c.RateTarget * float64(time.Second))
	d = max(d, c.IntervalMin)
	return d + c.Stagger(d)
}

// coordSender sends the agent's coordinate to a server for the node, as
// Consul's agent does, through the server port like anti-entropy.
type coordSender struct {
	cfg     CoordinateConfig
	node    string
	coord   func() (model.Coord, error)
	members func() int
	fwd     rpc.Forwarder
	servers func() []string
	token   func() string // the agent's token; "" sends none
	log     hclog.Logger
}

// run sends until ctx ends; done is closed when it has.
func (s *coordSender) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		t := time.NewTimer(s.cfg.interval(s.members()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := s.send(ctx); err != nil {
			s.log.Warn("coordinate update failed", "error", err)
		}
	}
}

// send sends the current coordinate to the first server that answers.
func (s *coordSender) send(ctx context.Context) error {
	c, err := s.coord()
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"Node": s.node,
		"Coord": map[string]any{"Vec": c.Vec, "Error": c.Error, "Adjustment": c.Adjustment, "Height": c.Height}})
	if err != nil {
		return fmt.Errorf("encode coordinate: %w", err)
	}
	servers := s.servers()
	if len(servers) == 0 {
		return errNoServers
	}
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	req := &rpc.Request{Origin: rpc.Origin{Node: s.node, Token: s.token()}, Method: http.MethodPut,
		URI: "/v1/coordinate/update", Body: body, Header: http.Header{"Content-Type": {"application/json"}}}
	var last error
	for _, addr := range servers {
		resp, err := s.fwd.Forward(ctx, addr, req)
		if err != nil {
			last = fmt.Errorf("coordinate update to %s: %w", addr, err)
			continue
		}
		if resp.Status != http.StatusOK {
			return fmt.Errorf("coordinate update: %d %s", resp.Status, resp.Body)
		}
		return nil
	}
	return last
}

// agentToken is the token an agent's own requests carry, as Consul's
// AgentToken: acl.tokens.agent, else acl.tokens.default.
func agentToken(tokens *httpapi.AgentTokens) func() string {
	return func() string {
		if t := tokens.Get(httpapi.TokenAgent); t != "" {
			return t
		}
		return tokens.Get(httpapi.TokenDefault)
	}
}

// startCoordinates starts the sender of an agent with a gossip pool
// (which computes the coordinate) unless coordinates are disabled; the
// returned channel is closed once it has stopped after ctx ends.
func startCoordinates(ctx context.Context, cfg CoordinateConfig, node string, pool *gossip.Pool, fwd rpc.Forwarder,
	servers func() []string, tokens *httpapi.AgentTokens, log hclog.Logger) <-chan struct{} {
	done := make(chan struct{})
	if cfg.Disable || pool == nil {
		close(done)
		return done
	}
	s := &coordSender{cfg: cfg.withDefaults(), node: node, coord: pool.Coordinate,
		members: func() int { return len(pool.List()) }, fwd: fwd, servers: servers,
		token: agentToken(tokens), log: log}
	go s.run(ctx, done)
	return done
}
