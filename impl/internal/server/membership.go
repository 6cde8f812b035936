package server

import (
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/model"
)

// Membership is the gossip pool a server belongs to (package gossip). With
// one, the leader registers nodes and sets their serfHealth from gossip
// (package reconcile, CONSUL.md §13), and self-registration is off.
type Membership interface {
	// Members is every member gossip knows, failed and left ones included
	// until they are reaped.
	Members() []reconcile.Member
	// Changes delivers membership changes as they happen; a change only
	// names the member to look at again, its status is read afresh.
	Changes() <-chan reconcile.Member
	// MarkBootstrapped tells the pool that this server belongs to a raft
	// cluster, so that servers joining later wait to be added instead of
	// bootstrapping one of their own.
	MarkBootstrapped() error
}

// fullReconcileEvery is how often the leader goes over every member even
// without a change, repairing any change that was dropped; Consul's is 60 s.
const fullReconcileEvery = 60 * time.Second

// consumeMembership drains membership changes for as long as the server
// runs, handing each to the current term's reconcile (and dropping it when
// this server does not lead: a new leader starts with a full pass).
func (s *Server) consumeMembership() {
	for {
		select {
		case m := <-s.cfg.Membership.Changes():
			select {
			case s.bootstrapWake <- struct{}{}:
			default:
			}
			s.lead.mu.Lock()
			t := s.lead.term
			s.lead.mu.Unlock()
			if t == nil {
				continue
			}
			select {
			case t.members <- m.Name:
			default:
				s.logger.Warn("membership change dropped; the next full reconcile repairs it", "member", m.Name)
			}
		case <-s.shutdownCh:
			return
		}
	}
}

// reconcileLoop is the leader's side of membership for one term: a full
// pass at once, then each change as it comes, and a full pass every
// fullReconcileEvery.
func (s *Server) reconcileLoop(t *leaderTerm) {
	for {
		s.reconcileAll(t)
		// The period runs from the end of a full pass, whatever changes
		// arrive meanwhile, so a steady stream of them cannot starve it.
		tick := make(chan struct{})
		timer := s.clock.AfterFunc(fullReconcileEvery, func() { close(tick) })
	changes:
		for {
			select {
			case name := <-t.members:
				s.reconcileOne(t, name)
			case <-tick:
				break changes
			case <-t.stop:
				timer.Stop()
				return
			}
		}
	}
}

// reconcileAll decides every member, then reaps catalog nodes gossip no
// longer knows.
func (s *Server) reconcileAll(t *leaderTerm) {
	// In name order, so that the entries a pass proposes do not depend on
	// map order (the simulator replays runs).
	members := slices.SortedFunc(slices.Values(s.cfg.Membership.Members()), func(a, b reconcile.Member) int {
		return strings.Compare(a.Name, b.Name)
	})
	// Node names compare ignoring case (S62), so a member is known under
	// any spelling of its name.
	known := make(map[string]bool, len(members))
	for _, m := range members {
		known[strings.ToLower(m.Name)] = true
		s.reconcileMember(t, m)
	}
	// The leader's own raft entry is replaced last, once every other
	// server's is (reconcile.SafeToReplaceSelf), whatever its name's place
	// in the order.
	for _, m := range members {
		if m.Name == s.cfg.NodeName {
			s.reconcileVoter(m)
		}
	}
	var unknown []reconcile.Member
	s.fsm.Read(func(st *model.State) {
		unknown = reconcile.Unknown(st, func(n string) bool { return known[strings.ToLower(n)] })
	})
	for _, m := range unknown {
		s.reconcileMember(t, m)
	}
}

// reconcileOne looks at one member afresh: its status now, not the one its
// change carried, so a change that waited in the channel cannot undo a
// later one.
func (s *Server) reconcileOne(t *leaderTerm, name string) {
	m := reconcile.Member{Name: name, Status: reconcile.Reaped}
	for _, cur := range s.cfg.Membership.Members() {
		if cur.Name == name {
			m = cur
		}
	}
	s.reconcileMember(t, m)
}

// reconcileMember brings raft's configuration and then the catalog in line
// with m: servers first, as Consul does, so that a new server is a voter
// before it is a catalog node.
func (s *Server) reconcileMember(t *leaderTerm, m reconcile.Member) {
	s.reconcileVoter(m)
	s.reconcileCatalog(t, m)
}

// reconcileVoter adds, replaces or removes m as a raft voter when
// reconcile says so. A failure is logged and left to the next pass.
func (s *Server) reconcileVoter(m reconcile.Member) {
	fut := s.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		s.logger.Warn("reading the raft configuration failed", "error", err)
		return
	}
	var voters []reconcile.Voter
	for _, srv := range fut.Configuration().Servers {
		voters = append(voters, reconcile.Voter{ID: string(srv.ID), Address: string(srv.Address)})
	}
	d := reconcile.DecideVoter(voters, m, s.cfg.NodeName)
	switch d.Change {
	case reconcile.AddVoter:
		s.addVoter(m, d.ID)
	case reconcile.RemoveVoter:
		s.logger.Info("removing server from raft", "server", m.Name, "id", d.ID, "status", m.Status.String())
		s.removeServer(m, d.ID)
	case reconcile.ReplaceVoter:
		if m.Name == s.cfg.NodeName {
			// Removing its own entry ends this leader's term; the next
			// leader adds this server back under its node ID.
			if !reconcile.SafeToReplaceSelf(voters, s.cfg.Membership.Members(), d.Stale) {
				return
			}
			s.logger.Info("leaving raft under an old server ID to be added back under the node ID", "old_id", d.Stale, "id", d.ID)
			s.removeServer(m, d.Stale)
			return
		}
		s.logger.Info("replacing a server's raft entry", "server", m.Name, "old_id", d.Stale, "id", d.ID)
		if s.removeServer(m, d.Stale) {
			s.addVoter(m, d.ID)
		}
	}
}

func (s *Server) addVoter(m reconcile.Member, id string) {
	s.logger.Info("adding server as a raft voter", "server", m.Name, "id", id, "raft_addr", m.RaftAddr)
	if err := s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(m.RaftAddr), 0, 10*time.Second).Error(); err != nil {
		s.logger.Warn("adding a raft voter failed; the next pass retries", "server", m.Name, "error", err)
	}
}

func (s *Server) removeServer(m reconcile.Member, id string) bool {
	if err := s.raft.RemoveServer(raft.ServerID(id), 0, 10*time.Second).Error(); err != nil {
		s.logger.Warn("removing a raft server failed; the next pass retries", "server", m.Name, "id", id, "error", err)
		return false
	}
	return true
}

// reconcileCatalog writes what reconcile.Decide says, retrying until the
// catalog agrees or the term ends.
func (s *Server) reconcileCatalog(t *leaderTerm, m reconcile.Member) {
	s.leaderWrite(t, "reconcile member "+m.Name+" ("+m.Status.String()+")", func() (model.Command, bool) {
		var (
			cmd model.Command
			ok  bool
		)
		s.fsm.Read(func(st *model.State) { cmd, ok = reconcile.Decide(st, m, s.cfg.NodeName) })
		return cmd, ok
	})
}
