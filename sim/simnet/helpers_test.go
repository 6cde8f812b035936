package simnet

import (
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// trace collects events from a Network's hook.
type trace struct {
	mu     sync.Mutex
	events []Event
}

func (tr *trace) add(e Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, e)
}

func (tr *trace) all() []Event {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]Event(nil), tr.events...)
}

func (tr *trace) count(k Kind, note string) int {
	c := 0
	for _, e := range tr.all() {
		if e.Kind == k && (note == "" || e.Note == note) {
			c++
		}
	}
	return c
}

func newNet(t *testing.T, opts Options) (*Network, *trace) {
	t.Helper()
	tr := &trace{}
	if opts.OnEvent == nil {
		opts.OnEvent = tr.add
	}
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n, tr
}

func newTrans(t *testing.T, n *Network, addr string) *Transport {
	t.Helper()
	tr, err := n.NewTransport(raft.ServerAddress(addr))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// responder answers every RPC on t like a trivially happy raft node and
// records what it received, until t closes.
type responder struct {
	mu   sync.Mutex
	got  []any
	data [][]byte
}

func respond(t *Transport) *responder {
	r := &responder{}
	go func() {
		for {
			select {
			case rpc := <-t.Consumer():
				var data []byte
				if rpc.Reader != nil {
					buf := make([]byte, 1<<16)
					k, _ := rpc.Reader.Read(buf)
					data = buf[:k]
				}
				r.mu.Lock()
				r.got = append(r.got, rpc.Command)
				r.data = append(r.data, data)
				r.mu.Unlock()
				switch c := rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					rpc.Respond(&raft.AppendEntriesResponse{Term: c.Term, Success: true, LastLog: c.PrevLogEntry + uint64(len(c.Entries))}, nil)
				case *raft.RequestVoteRequest:
					rpc.Respond(&raft.RequestVoteResponse{Term: c.Term, Granted: true}, nil)
				case *raft.RequestPreVoteRequest:
					rpc.Respond(&raft.RequestPreVoteResponse{Term: c.Term, Granted: true}, nil)
				case *raft.InstallSnapshotRequest:
					rpc.Respond(&raft.InstallSnapshotResponse{Term: c.Term, Success: true}, nil)
				case *raft.TimeoutNowRequest:
					rpc.Respond(&raft.TimeoutNowResponse{}, nil)
				}
			case <-t.done:
				return
			}
		}
	}()
	return r
}

func (r *responder) received() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.got...)
}

func ae(term uint64, entries ...string) *raft.AppendEntriesRequest {
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: term, PrevLogEntry: 1, LeaderCommitIndex: 1}
	for i, e := range entries {
		req.Entries = append(req.Entries, &raft.Log{Index: uint64(i + 2), Term: term, Data: []byte(e)})
	}
	return req
}
