package simnet

import (
	"fmt"
	"slices"
	"strconv"
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
func describe(m any) string { return string(appendDescription(nil, m)) }

// appendDescription appends describe's text to b, without fmt: the network
// hashes it for every message it sends (msgRandLocked).
func appendDescription(b []byte, m any) []byte {
	u := strconv.AppendUint
	switch m := m.(type) {
	case *raft.AppendEntriesRequest:
		if isHeartbeat(m) {
			return u(append(b, "Heartbeat t="...), m.Term, 10)
		}
		b = u(append(b, "AppendEntries t="...), m.Term, 10)
		b = u(append(b, " prev="...), m.PrevLogEntry, 10)
		b = u(append(b, '/'), m.PrevLogTerm, 10)
		b = strconv.AppendInt(append(b, " n="...), int64(len(m.Entries)), 10)
		return u(append(b, " commit="...), m.LeaderCommitIndex, 10)
	case *raft.RequestVoteRequest:
		b = u(append(b, "RequestVote t="...), m.Term, 10)
		b = u(append(b, " last="...), m.LastLogIndex, 10)
		b = u(append(b, '/'), m.LastLogTerm, 10)
		return strconv.AppendBool(append(b, " transfer="...), m.LeadershipTransfer)
	case *raft.RequestPreVoteRequest:
		b = u(append(b, "RequestPreVote t="...), m.Term, 10)
		b = u(append(b, " last="...), m.LastLogIndex, 10)
		return u(append(b, '/'), m.LastLogTerm, 10)
	case *raft.InstallSnapshotRequest:
		b = u(append(b, "InstallSnapshot t="...), m.Term, 10)
		b = u(append(b, " last="...), m.LastLogIndex, 10)
		b = u(append(b, '/'), m.LastLogTerm, 10)
		return strconv.AppendInt(append(b, " size="...), m.Size, 10)
	case *raft.TimeoutNowRequest:
		return append(b, "TimeoutNow"...)
	case packetMsg:
		return append(strconv.AppendInt(append(b, "packet "...), int64(m.size), 10), 'B')
	case replyMsg:
		if m.resp.Error != nil {
			return append(append(b, "re error: "...), m.resp.Error.Error()...)
		}
		switch r := m.resp.Response.(type) {
		case *raft.AppendEntriesResponse:
			b = u(append(b, "re AppendEntries t="...), r.Term, 10)
			b = strconv.AppendBool(append(b, " ok="...), r.Success)
			return u(append(b, " last="...), r.LastLog, 10)
		case *raft.RequestVoteResponse:
			b = u(append(b, "re RequestVote t="...), r.Term, 10)
			return strconv.AppendBool(append(b, " granted="...), r.Granted)
		case *raft.RequestPreVoteResponse:
			b = u(append(b, "re RequestPreVote t="...), r.Term, 10)
			return strconv.AppendBool(append(b, " granted="...), r.Granted)
		case *raft.InstallSnapshotResponse:
			b = u(append(b, "re InstallSnapshot t="...), r.Term, 10)
			return strconv.AppendBool(append(b, " ok="...), r.Success)
		case *raft.TimeoutNowResponse:
			return append(b, "re TimeoutNow"...)
		}
		return fmt.Appendf(b, "re %T", m.resp.Response)
	case streamMsg:
		if m.what == "data" {
			return append(strconv.AppendInt(append(b, "data "...), int64(m.size), 10), 'B')
		}
		return append(b, m.what...)
	}
	return fmt.Appendf(b, "%T", m)
}
