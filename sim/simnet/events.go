package simnet

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Kind classifies an Event.
type Kind uint8

// Event kinds.
const (
	Send    Kind = iota + 1 // a message left its sender and will arrive
	Deliver                 // a message reached its receiver
	Drop                    // a message was lost (Note says why)
	Hold                    // a message is queued at a paused node
	Timeout                 // an RPC caller gave up waiting
	Fault                   // partition, heal, pause, resume or link change
	Conn                    // connection lifecycle: dial, refuse, close, break
)

var kindNames = [...]string{"?", "send", "deliver", "drop", "hold", "timeout", "fault", "conn"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Event is one entry of the network trace.
type Event struct {
	At       time.Duration // virtual time since the Network was created
	Kind     Kind
	From, To string // nodes; empty for network-wide faults
	ID       uint64 // message number on its From->To link, stable across holds; 0 for faults
	Msg      string // what travelled, or what changed
	Note     string // why (drop reason, hold side, …)
}

// String renders the event as one trace line.
func (e Event) String() string {
	s := fmt.Sprintf("%v %s", e.At, e.Kind)
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf(" %s->%s", e.From, e.To)
	}
	if e.ID != 0 {
		s += fmt.Sprintf(" #%d", e.ID)
	}
	if e.Msg != "" {
		s += " " + e.Msg
	}
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	return s
}

// CanonicalTrace renders events as lines with the events of each virtual
// instant sorted. Goroutines woken at the same instant (two replication
// goroutines, two RPC timeouts) run in an order the scheduler picks; sorting
// within the instant keeps that benign difference out of trace comparisons,
// while any difference in what happened, or when, still shows.
func CanonicalTrace(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	for i := 0; i < len(evs); {
		j := i + 1
		for j < len(evs) && evs[j].At == evs[i].At {
			j++
		}
		slices.Sort(out[i:j])
		i = j
	}
	return out
}

func (n *Network) emitLocked(k Kind, e *envelope, note string) {
	if n.opts.OnEvent == nil {
		return
	}
	n.opts.OnEvent(Event{At: time.Since(n.start), Kind: k, From: e.from, To: e.to, ID: e.id, Msg: describe(e.msg), Note: note})
}

func (n *Network) ctlLocked(k Kind, from, to, msg, note string) {
	if n.opts.OnEvent == nil {
		return
	}
	n.opts.OnEvent(Event{At: time.Since(n.start), Kind: k, From: from, To: to, Msg: msg, Note: note})
}

// replyMsg and streamMsg label non-request messages in the trace.
type replyMsg struct{ resp raft.RPCResponse }

type streamMsg struct {
	what string // "SYN", "SYNACK", "RST", "FIN" or "data"
	size int
}

// describe summarises a message compactly but with enough raft state (terms,
// indexes) that two traces differ when the runs differ.
func describe(m any) string {
	switch m := m.(type) {
	case *raft.AppendEntriesRequest:
		if isHeartbeat(m) {
			return fmt.Sprintf("Heartbeat t=%d", m.Term)
		}
		return fmt.Sprintf("AppendEntries t=%d prev=%d/%d n=%d commit=%d", m.Term, m.PrevLogEntry, m.PrevLogTerm, len(m.Entries), m.LeaderCommitIndex)
	case *raft.RequestVoteRequest:
		return fmt.Sprintf("RequestVote t=%d last=%d/%d transfer=%v", m.Term, m.LastLogIndex, m.LastLogTerm, m.LeadershipTransfer)
	case *raft.RequestPreVoteRequest:
		return fmt.Sprintf("RequestPreVote t=%d last=%d/%d", m.Term, m.LastLogIndex, m.LastLogTerm)
	case *raft.InstallSnapshotRequest:
		return fmt.Sprintf("InstallSnapshot t=%d last=%d/%d size=%d", m.Term, m.LastLogIndex, m.LastLogTerm, m.Size)
	case *raft.TimeoutNowRequest:
		return "TimeoutNow"
	case packetMsg:
		return fmt.Sprintf("packet %dB", m.size)
	case replyMsg:
		if m.resp.Error != nil {
			return "re error: " + m.resp.Error.Error()
		}
		switch r := m.resp.Response.(type) {
		case *raft.AppendEntriesResponse:
			return fmt.Sprintf("re AppendEntries t=%d ok=%v last=%d", r.Term, r.Success, r.LastLog)
		case *raft.RequestVoteResponse:
			return fmt.Sprintf("re RequestVote t=%d granted=%v", r.Term, r.Granted)
		case *raft.RequestPreVoteResponse:
			return fmt.Sprintf("re RequestPreVote t=%d granted=%v", r.Term, r.Granted)
		case *raft.InstallSnapshotResponse:
			return fmt.Sprintf("re InstallSnapshot t=%d ok=%v", r.Term, r.Success)
		case *raft.TimeoutNowResponse:
			return "re TimeoutNow"
		}
		return fmt.Sprintf("re %T", m.resp.Response)
	case streamMsg:
		if m.what == "data" {
			return fmt.Sprintf("data %dB", m.size)
		}
		return m.what
	}
	return fmt.Sprintf("%T", m)
}
