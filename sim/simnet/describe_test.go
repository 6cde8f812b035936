package simnet

import (
	"errors"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/hashicorp/raft"
)

// describeFmt is describe as it was written with fmt, before the network
// hashed descriptions without allocating: the messages' draws depend on
// these bytes, so a seed's run stays what it was.
func describeFmt(m any) string {
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

// TestDescribeIsTheFmtText: every kind of message is described, and so
// hashed into its draws, byte for byte as before, and the hash is FNV-1a.
func TestDescribeIsTheFmtText(t *testing.T) {
	big := ^uint64(0)
	msgs := []any{
		&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("n1")}, Term: 7},
		&raft.AppendEntriesRequest{Term: big, PrevLogEntry: 12, PrevLogTerm: 6, Entries: make([]*raft.Log, 3), LeaderCommitIndex: 11},
		&raft.RequestVoteRequest{Term: 3, LastLogIndex: 40, LastLogTerm: 2, LeadershipTransfer: true},
		&raft.RequestVoteRequest{Term: 3},
		&raft.RequestPreVoteRequest{Term: 4, LastLogIndex: 41, LastLogTerm: 3},
		&raft.InstallSnapshotRequest{Term: 5, LastLogIndex: 99, LastLogTerm: 4, Size: 1 << 40},
		&raft.TimeoutNowRequest{},
		packetMsg{size: 1400},
		replyMsg{resp: raft.RPCResponse{Error: errors.New("boom")}},
		replyMsg{resp: raft.RPCResponse{Response: &raft.AppendEntriesResponse{Term: 2, Success: true, LastLog: 9}}},
		replyMsg{resp: raft.RPCResponse{Response: &raft.RequestVoteResponse{Term: 2, Granted: true}}},
		replyMsg{resp: raft.RPCResponse{Response: &raft.RequestPreVoteResponse{Term: 2}}},
		replyMsg{resp: raft.RPCResponse{Response: &raft.InstallSnapshotResponse{Term: 2, Success: true}}},
		replyMsg{resp: raft.RPCResponse{Response: &raft.TimeoutNowResponse{}}},
		replyMsg{resp: raft.RPCResponse{Response: 42}},
		streamMsg{"data", 512},
		streamMsg{"SYN", 0},
		struct{}{},
	}
	for _, m := range msgs {
		want := describeFmt(m)
		if got := describe(m); got != want {
			t.Errorf("describe(%#v) = %q, want %q", m, got, want)
		}
		h := fnv.New64a()
		h.Write([]byte("n1\x00n2\x00" + want))
		if got := fnvString(fnvByte(fnvString(fnvByte(fnvString(fnvOffset64, "n1"), 0), "n2"), 0), want); got != h.Sum64() {
			t.Errorf("hash of %q: %x, hash/fnv's %x", want, got, h.Sum64())
		}
	}
}
