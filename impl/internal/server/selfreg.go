package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/internal/backoff"
	"github.com/tenurekv/tenure/model"
)

// registerLoop is self-registration (not raftlog's log sync, nor an
// agent's anti-entropy): it keeps this server's own node registered with its
// HTTP address and a passing serfHealth check (S47). With a gossip
// Membership the leader registers every member, this one included, and the
// loop only notes when that has happened. It re-checks whenever the catalog
// changes (so a serfHealth the leader marked critical is restored as soon as
// this node hears of it; KV and session writes do not wake it), retries
// failures, and a registration sent but not yet seen here, with backoff, and
// otherwise sleeps.
func (s *Server) registerLoop() {
	pause := backoff.New(s.cfg.registerRetry, 16*s.cfg.registerRetry)
	for {
		changed := s.fsm.CatalogChanged()
		if s.registeredHere() {
			s.regOnce.Do(func() { close(s.registered) })
			pause.Reset()
			select {
			case <-changed:
			case <-s.registerKick:
			case <-s.shutdownCh:
				return
			}
			continue
		}
		if s.cfg.Membership != nil {
			// The leader registers this node from gossip: only wait.
			select {
			case <-changed:
			case <-s.shutdownCh:
				return
			}
			continue
		}
		err := s.pushRegistration()
		if err == nil {
			// Sent; wait for it to arrive here, or retry if it never does.
			if !s.sleepOr(pause.Next(), changed) {
				return
			}
			continue
		}
		wait := pause.Next()
		s.logger.Debug("self-registration failed; retrying", "error", err, "backoff", wait)
		// Without a known leader, the leader's own registration arriving
		// here is the news to wait for; other failures wait out the backoff.
		var wake <-chan struct{}
		if errors.Is(err, errNoLeader) {
			wake = changed
		}
		if !s.sleepOr(wait, wake) {
			return
		}
	}
}

// sleepOr waits d on the clock, a kick, or wake; false on shutdown.
func (s *Server) sleepOr(d time.Duration, wake <-chan struct{}) bool {
	done := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
	case <-wake:
	case <-s.registerKick:
	case <-s.shutdownCh:
		return false
	}
	return true
}

// kickRegister asks the loop to re-check now (for example on taking office).
func (s *Server) kickRegister() {
	select {
	case s.registerKick <- struct{}{}:
	default:
	}
}

// registeredHere reports whether the local state already shows this node
// with its address and a passing serfHealth.
func (s *Server) registeredHere() bool {
	ok := false
	s.fsm.Read(func(st *model.State) {
		n, has := st.Node(s.cfg.NodeName)
		c, hasCheck := st.Check(model.CheckKey{Node: s.cfg.NodeName, CheckID: model.SerfHealthCheckID})
		ok = has && n.Address == s.cfg.nodeAddr() && hasCheck && c.Status == model.HealthPassing
	})
	return ok
}

// selfRegistration is this server's node, with its ID, and a passing
// serfHealth. The node keeps the tagged addresses and meta the catalog has
// for it (S62).
func (s *Server) selfRegistration() model.Register {
	reg := model.Register{Node: s.cfg.NodeName, ID: s.cfg.NodeID, Address: s.cfg.nodeAddr(), Checks: []model.CheckSpec{
		{CheckID: model.SerfHealthCheckID, Name: reconcile.CheckName, Status: model.HealthPassing, Output: reconcile.OutputAlive},
	}}
	s.fsm.Read(func(st *model.State) {
		if n, ok := st.Node(s.cfg.NodeName); ok {
			reg.TaggedAddresses, reg.NodeMeta = n.TaggedAddresses, n.Meta
			if reg.ID == "" {
				reg.ID = n.ID
			}
		}
	})
	return reg
}

// pushRegistration writes the registration: directly on the leader, else
// through the leader's server port, since only the leader can propose.
func (s *Server) pushRegistration() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reg := s.selfRegistration()
	if s.raft.State() == raft.Leader {
		res, err := s.Apply(ctx, model.Command{Register: &reg})
		if err != nil {
			return fmt.Errorf("register self: %w", err)
		}
		if res.Err != nil {
			return fmt.Errorf("register self: %w", res.Err)
		}
		return nil
	}
	_, addr, known := s.Leader()
	if !known {
		return errNoLeader
	}
	return s.registerVia(ctx, addr, reg)
}

var errNoLeader = errors.New("register self: no leader known yet")

// registerVia sends reg as a catalog register to the server port at addr,
// as a request this server forwards (the leader does not forward it on).
func (s *Server) registerVia(ctx context.Context, addr string, reg model.Register) error {
	c := reg.Checks[0]
	body, err := json.Marshal(catalogwire.Register{Node: reg.Node, Address: reg.Address,
		Check: &catalogwire.Check{Node: reg.Node, CheckID: c.CheckID, Name: c.Name, Status: c.Status}})
	if err != nil {
		return fmt.Errorf("register self via %s: %w", addr, err)
	}
	origin := rpc.Origin{Node: s.cfg.NodeName, Forwarded: true}
	if s.cfg.ACL.AgentToken != nil {
		origin.Token = s.cfg.ACL.AgentToken()
	}
	resp, err := s.forward.Forward(ctx, addr, &rpc.Request{Origin: origin,
		Method: http.MethodPut, URI: "/v1/catalog/register", Header: http.Header{"Content-Type": {"application/json"}},
		Body: body})
	if err != nil {
		return fmt.Errorf("register self via %s: %w", addr, err)
	}
	if resp.Status != http.StatusOK {
		msg := resp.Body[:min(len(resp.Body), 1024)]
		return fmt.Errorf("register self via %s: %d: %s", addr, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
