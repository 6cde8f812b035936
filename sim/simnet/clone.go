package simnet

import (
	"bytes"

	"github.com/hashicorp/raft"
)

// Messages are deep-copied when they enter the network so that neither side
// can see the other's later mutations: raft reuses request structs (the
// heartbeat request) and the in-memory log store keeps the *Log pointers it
// is given.

func cloneHeader(h raft.RPCHeader) raft.RPCHeader {
	h.ID = bytes.Clone(h.ID)
	h.Addr = bytes.Clone(h.Addr)
	return h
}

func cloneLog(l *raft.Log) *raft.Log {
	if l == nil {
		return nil
	}
	c := *l
	c.Data = bytes.Clone(l.Data)
	c.Extensions = bytes.Clone(l.Extensions)
	return &c
}

// cloneMsg deep-copies any raft request or response the transport carries.
// Unknown types are returned as is (they are never produced by Transport).
func cloneMsg(m any) any {
	switch m := m.(type) {
	case *raft.AppendEntriesRequest:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		//lint:ignore SA1019 raft v1.8 still sends the deprecated field; copy it faithfully
		c.Leader = bytes.Clone(m.Leader)
		if m.Entries != nil {
			c.Entries = make([]*raft.Log, len(m.Entries))
			for i, l := range m.Entries {
				c.Entries[i] = cloneLog(l)
			}
		}
		return &c
	case *raft.AppendEntriesResponse:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		return &c
	case *raft.RequestVoteRequest:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		//lint:ignore SA1019 raft v1.8 still sends the deprecated field; copy it faithfully
		c.Candidate = bytes.Clone(m.Candidate)
		return &c
	case *raft.RequestVoteResponse:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		c.Peers = bytes.Clone(m.Peers)
		return &c
	case *raft.RequestPreVoteRequest:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		return &c
	case *raft.RequestPreVoteResponse:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		return &c
	case *raft.InstallSnapshotRequest:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		c.Leader = bytes.Clone(m.Leader)
		c.Peers = bytes.Clone(m.Peers)
		c.Configuration = bytes.Clone(m.Configuration)
		return &c
	case *raft.InstallSnapshotResponse:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		return &c
	case *raft.TimeoutNowRequest:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		return &c
	case *raft.TimeoutNowResponse:
		c := *m
		c.RPCHeader = cloneHeader(m.RPCHeader)
		return &c
	}
	return m
}
