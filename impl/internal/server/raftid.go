package server

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/raftlog"
)

// Raft server IDs are node IDs, as in Consul. Servers that tenure named by
// node name before keep their name until the leader's reconcile replaces
// their entry with one under the node ID (reconcile.DecideVoter); a server
// then takes the new ID in place (raft's SetLocalID, tenure's patch), so a
// cluster converges without restarts and stays electable throughout: a
// server starts under the ID its stored configuration lists it by.

// startID is the raft server ID this server starts with: on stores that
// already hold a configuration, the ID that configuration lists it under
// (its node ID, or its name from before node IDs), so that it can stand
// for election at once; else Config.bootstrapID.
func startID(cfg Config, rc *raft.Config, st *raftlog.Stores) (raft.ServerID, error) {
	if cfg.NodeID == "" {
		return rc.LocalID, nil
	}
	has, err := raft.HasExistingState(st.Logs, st.Stable, st.Snaps)
	if err != nil {
		return "", fmt.Errorf("inspect raft state: %w", err)
	}
	if !has {
		return rc.LocalID, nil
	}
	conf, err := storedConfiguration(rc, st)
	if err != nil {
		return "", err
	}
	return listedID(conf, cfg, rc.LocalID), nil
}

// listedID is the one of this server's IDs (node ID first, then name) that
// conf lists, or fallback when it lists neither.
func listedID(conf raft.Configuration, cfg Config, fallback raft.ServerID) raft.ServerID {
	for _, id := range []string{cfg.NodeID, cfg.NodeName} {
		if id != "" && slices.ContainsFunc(conf.Servers, func(s raft.Server) bool { return s.ID == raft.ServerID(id) }) {
			return raft.ServerID(id)
		}
	}
	return fallback
}

// storedConfiguration is the latest raft configuration in the stores, read
// without starting raft: no goroutine, no write, and no snapshot restored
// into a state machine (raft.GetConfiguration over a throwaway FSM and
// transport).
func storedConfiguration(rc *raft.Config, st *raftlog.Stores) (raft.Configuration, error) {
	probe := *rc
	probe.NoSnapshotRestoreOnStart = true
	probe.Rand = nil
	probe.Logger = hclog.NewNullLogger()
	_, trans := raft.NewInmemTransport("")
	conf, err := raft.GetConfiguration(&probe, noFSM{}, st.Logs, st.Stable, st.Snaps, trans)
	if err != nil {
		return raft.Configuration{}, fmt.Errorf("read the stored raft configuration: %w", err)
	}
	return conf, nil
}

// noFSM is the state machine storedConfiguration's probe never uses.
type noFSM struct{}

var errProbe = errors.New("configuration probe: no state machine")

func (noFSM) Apply(*raft.Log) any                 { return errProbe }
func (noFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errProbe }
func (noFSM) Restore(rc io.ReadCloser) error      { return errors.Join(errProbe, rc.Close()) }

// kickRaftID asks followRaftID to look at the configuration again; the FSM
// calls it when it applies a configuration change or a snapshot.
func (s *Server) kickRaftID() {
	select {
	case s.raftIDKick <- struct{}{}:
	default:
	}
}

// followRaftID keeps this server's raft ID the one the configuration lists
// it under, for as long as the server runs: when the leader has replaced
// its entry (name by node ID, or back), it takes the listed ID.
func (s *Server) followRaftID() {
	for {
		select {
		case <-s.raftIDKick:
			s.adoptListedID()
		case <-s.shutdownCh:
			return
		}
	}
}

// adoptListedID takes the listed ID if the configuration no longer lists
// the current one. raft takes a new ID only as a follower; a leader or
// candidate is retried after a pause, while the change is still due.
func (s *Server) adoptListedID() {
	for attempt := 0; attempt < 8; attempt++ {
		fut := s.raft.GetConfiguration()
		if err := fut.Error(); err != nil {
			s.logger.Warn("reading the raft configuration failed", "error", err)
			return
		}
		conf := fut.Configuration()
		cur := raft.ServerID(s.localID())
		next := listedID(conf, s.cfg, cur)
		if next == cur || slices.ContainsFunc(conf.Servers, func(srv raft.Server) bool { return srv.ID == cur }) {
			return
		}
		err := s.raft.SetLocalID(next)
		if err == nil {
			s.setLocalID(string(next))
			s.logger.Info("raft server ID changed to the one the configuration lists", "from", cur, "to", next)
			return
		}
		if errors.Is(err, raft.ErrRaftShutdown) {
			return
		}
		s.logger.Debug("taking the listed raft server ID failed; retrying", "id", next, "error", err)
		if !s.sleep(s.cfg.retryBackoff, nil) {
			return
		}
	}
}

// localID is the raft server ID this server runs under now.
func (s *Server) localID() string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return s.raftID
}

func (s *Server) setLocalID(id string) {
	s.idMu.Lock()
	s.raftID = id
	s.idMu.Unlock()
}
