package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/tenurekv/tenure/model"
)

// Wire format of a raft log entry: one version byte, one command-type byte,
// then the variant's struct as a msgpack map. The type byte keeps entries
// small (no empty union fields) and lets an old binary name exactly what it
// cannot decode; msgpack maps keep field additions backward compatible.
const commandVersion byte = 1

// Wire format of a snapshot: one version byte, then snapshotV1 as msgpack.
const snapshotVersion byte = 1

// Command type bytes. Never renumber: they are in every stored raft log.
const (
	cmdRegister       byte = 1
	cmdDeregister     byte = 2
	cmdCreateSession  byte = 3
	cmdDestroySession byte = 4
	cmdKV             byte = 5
	cmdTxn            byte = 6
	cmdReap           byte = 7
	cmdQuery          byte = 8
	cmdACL            byte = 9
	// cmdTxnOps is a transaction with catalog or session ops (S68, S69);
	// one of KV ops only is still written as cmdTxn, which every binary
	// reads.
	cmdTxnOps byte = 10
	// cmdCoordinates is a batch of network coordinates (S89).
	cmdCoordinates byte = 11
)

// kvTxnV1 is cmdTxn's payload: a transaction's KV ops, as every binary
// before S68 wrote them.
type kvTxnV1 struct {
	Ops []model.KVOp
}

// errUnknownCommand and errUnknownVersion let callers (and tests) tell a
// newer-format entry apart from a corrupt one.
var (
	errUnknownVersion = errors.New("unknown encoding version")
	errUnknownCommand = errors.New("unknown command type")
)

// wireCodec encodes commands and snapshots. It owns its msgpack handle (the
// handle caches type information) so that no state is shared between servers.
//
// Every command is encoded once on the leader and decoded once on each
// server, and a fresh msgpack encoder or decoder allocates its own buffers,
// so finished ones are kept for reuse (BenchmarkCommandCodec).
type wireCodec struct {
	h        *codec.MsgpackHandle
	encoders sync.Pool // *pooledEncoder
	decoders sync.Pool // *codec.Decoder
}

func newWireCodec() *wireCodec {
	h := &codec.MsgpackHandle{}
	// A corrupt length prefix must not make the decoder allocate gigabytes
	// before noticing the input is short.
	h.MaxInitLen = 1 << 16
	return &wireCodec{h: h}
}

// encodeCommand returns cmd's log-entry bytes. A command that sets no variant
// or several is refused: it could not be decoded back to the same thing.
func (c *wireCodec) encodeCommand(cmd model.Command) ([]byte, error) {
	if _, err := cmd.Kind(); err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	var (
		typ     byte
		payload any
	)
	switch {
	case cmd.Register != nil:
		typ, payload = cmdRegister, cmd.Register
	case cmd.Deregister != nil:
		typ, payload = cmdDeregister, cmd.Deregister
	case cmd.CreateSession != nil:
		typ, payload = cmdCreateSession, cmd.CreateSession
	case cmd.DestroySession != nil:
		typ, payload = cmdDestroySession, cmd.DestroySession
	case cmd.KV != nil:
		typ, payload = cmdKV, cmd.KV
	case cmd.Txn != nil:
		if ops, only := cmd.Txn.KVOps(); only {
			typ, payload = cmdTxn, kvTxnV1{Ops: ops}
		} else {
			typ, payload = cmdTxnOps, cmd.Txn
		}
	case cmd.Reap != nil:
		typ, payload = cmdReap, cmd.Reap
	case cmd.Query != nil:
		typ, payload = cmdQuery, cmd.Query
	case cmd.ACL != nil:
		typ, payload = cmdACL, cmd.ACL
	case cmd.Coordinates != nil:
		typ, payload = cmdCoordinates, cmd.Coordinates
	}
	e, _ := c.encoders.Get().(*pooledEncoder)
	if e == nil {
		e = &pooledEncoder{}
		e.enc = codec.NewEncoderBytes(&e.buf, c.h)
	} else {
		e.enc.ResetBytes(&e.buf) // writes from the start of buf
	}
	if err := e.enc.Encode(payload); err != nil {
		// Not pooled: an encoder that failed part-way may hold state.
		return nil, fmt.Errorf("encode %T: %w", payload, err)
	}
	out := make([]byte, 0, 2+len(e.buf))
	out = append(append(out, commandVersion, typ), e.buf...)
	if cap(e.buf) <= maxPooledEncodeBuf {
		c.encoders.Put(e)
	}
	return out, nil
}

// pooledEncoder is a msgpack encoder with the scratch buffer it writes into.
type pooledEncoder struct {
	enc *codec.Encoder
	buf []byte
}

// maxPooledEncodeBuf keeps a rare large command (a big txn or register) from
// pinning its buffer in the pool.
const maxPooledEncodeBuf = 64 << 10

// decodeCommand reverses encodeCommand. Any malformed input is an error,
// never a panic: the FSM returns it as the entry's response.
func (c *wireCodec) decodeCommand(data []byte) (cmd model.Command, err error) {
	if len(data) < 2 {
		return model.Command{}, fmt.Errorf("decode command: entry of %d bytes is too short", len(data))
	}
	if data[0] != commandVersion {
		return model.Command{}, fmt.Errorf("decode command: %w %d (this server reads %d)", errUnknownVersion, data[0], commandVersion)
	}
	var target any
	switch data[1] {
	case cmdRegister:
		cmd.Register = &model.Register{}
		target = cmd.Register
	case cmdDeregister:
		cmd.Deregister = &model.Deregister{}
		target = cmd.Deregister
	case cmdCreateSession:
		cmd.CreateSession = &model.CreateSession{}
		target = cmd.CreateSession
	case cmdDestroySession:
		cmd.DestroySession = &model.DestroySession{}
		target = cmd.DestroySession
	case cmdKV:
		cmd.KV = &model.KVOp{}
		target = cmd.KV
	case cmdTxn:
		var v1 kvTxnV1
		if err := c.decode(data[2:], &v1); err != nil {
			return model.Command{}, fmt.Errorf("decode command type %d: %w", data[1], err)
		}
		cmd.Txn = model.KVTxn(v1.Ops...)
		return cmd, nil
	case cmdTxnOps:
		cmd.Txn = &model.Txn{}
		target = cmd.Txn
	case cmdReap:
		cmd.Reap = &model.Reap{}
		target = cmd.Reap
	case cmdQuery:
		cmd.Query = &model.QueryOp{}
		target = cmd.Query
	case cmdACL:
		cmd.ACL = &model.ACLOp{}
		target = cmd.ACL
	case cmdCoordinates:
		cmd.Coordinates = &model.CoordinateBatch{}
		target = cmd.Coordinates
	default:
		return model.Command{}, fmt.Errorf("decode command: %w %d", errUnknownCommand, data[1])
	}
	if err := c.decode(data[2:], target); err != nil {
		return model.Command{}, fmt.Errorf("decode command type %d: %w", data[1], err)
	}
	return cmd, nil
}

// snapshotV1 is model.State flattened into slices: CheckKey map keys do not
// survive msgpack, and sorted slices make equal states encode identically.
type snapshotV1 struct {
	Nodes      []model.Node
	Checks     []model.Check
	Sessions   []model.Session
	KV         []model.KVEntry
	Tombstones map[string]uint64
	LockIssued map[string]uint64
	DelayedAt  map[string]uint64
	Tables     model.TableIndexes
	// LockFloor and ReapedThrough come from reaps (S52); a snapshot written
	// before reaping existed decodes them as zero, which is what it meant.
	LockFloor     uint64
	ReapedThrough uint64
	// Services and Queries came with services and prepared queries
	// (S55, S58); an older snapshot decodes them as empty, which it meant.
	Services []model.Service
	Queries  []model.PreparedQuery
	// The ACL tables (S87); an older snapshot decodes them as empty and
	// never bootstrapped, which it meant.
	ACLTokens         []model.ACLToken
	ACLPolicies       []model.ACLPolicy
	ACLRoles          []model.ACLRole
	ACLBootstrapIndex uint64
	// Coordinates (S89); an older snapshot decodes them as empty.
	Coordinates []model.Coordinate
}

func (c *wireCodec) encodeSnapshot(s *model.State) ([]byte, error) {
	st := s.Snapshot()
	snap := snapshotV1{
		Nodes:         s.NodeList(),
		Checks:        s.CheckList("", ""),
		Sessions:      s.SessionList(""),
		Tombstones:    st.Tombstones,
		LockIssued:    st.LockIssued,
		DelayedAt:     st.DelayedAt,
		Tables:        st.Tables,
		LockFloor:     st.LockFloor,
		ReapedThrough: st.ReapedThrough,
		Services:      s.ServiceList(""),
		Queries:       s.QueryList(),

		ACLTokens:         s.ACLTokenList(),
		ACLPolicies:       s.ACLPolicyList(),
		ACLRoles:          s.ACLRoleList(),
		ACLBootstrapIndex: s.ACLBootstrapIndex(),
		Coordinates:       s.CoordinateList(),
	}
	for _, k := range slices.Sorted(maps.Keys(st.KV)) {
		snap.KV = append(snap.KV, st.KV[k])
	}
	var buf bytes.Buffer
	buf.WriteByte(snapshotVersion)
	if err := codec.NewEncoder(&buf, c.h).Encode(&snap); err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return buf.Bytes(), nil
}

func (c *wireCodec) decodeSnapshot(data []byte) (*model.State, error) {
	if len(data) < 1 {
		return nil, errors.New("decode snapshot: empty")
	}
	if data[0] != snapshotVersion {
		return nil, fmt.Errorf("decode snapshot: %w %d (this server reads %d)", errUnknownVersion, data[0], snapshotVersion)
	}
	var snap snapshotV1
	if err := c.decode(data[1:], &snap); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	st := model.Snapshot{
		Nodes:      make(map[string]model.Node, len(snap.Nodes)),
		Services:   make(map[model.ServiceKey]model.Service, len(snap.Services)),
		Checks:     make(map[model.CheckKey]model.Check, len(snap.Checks)),
		Sessions:   make(map[string]model.Session, len(snap.Sessions)),
		Queries:    make(map[string]model.PreparedQuery, len(snap.Queries)),
		KV:         make(map[string]model.KVEntry, len(snap.KV)),
		Tombstones: snap.Tombstones, LockIssued: snap.LockIssued, DelayedAt: snap.DelayedAt,
		Tables: snap.Tables, LockFloor: snap.LockFloor, ReapedThrough: snap.ReapedThrough,
		ACLTokens:         make(map[string]model.ACLToken, len(snap.ACLTokens)),
		ACLPolicies:       make(map[string]model.ACLPolicy, len(snap.ACLPolicies)),
		ACLRoles:          make(map[string]model.ACLRole, len(snap.ACLRoles)),
		ACLBootstrapIndex: snap.ACLBootstrapIndex,
		Coordinates:       make(map[model.CoordKey]model.Coord, len(snap.Coordinates)),
	}
	// A record listed twice would silently overwrite the first: refuse it.
	for _, n := range snap.Nodes {
		if err := putOnce(st.Nodes, n.Name, n, "node"); err != nil {
			return nil, err
		}
	}
	for _, sv := range snap.Services {
		if err := putOnce(st.Services, model.ServiceKey{Node: sv.Node, ServiceID: sv.ServiceID}, sv, "service"); err != nil {
			return nil, err
		}
	}
	for _, ch := range snap.Checks {
		if err := putOnce(st.Checks, model.CheckKey{Node: ch.Node, CheckID: ch.CheckID}, ch, "check"); err != nil {
			return nil, err
		}
	}
	for _, se := range snap.Sessions {
		if err := putOnce(st.Sessions, se.ID, se, "session"); err != nil {
			return nil, err
		}
	}
	for _, q := range snap.Queries {
		if err := putOnce(st.Queries, q.ID, q, "prepared query"); err != nil {
			return nil, err
		}
	}
	for _, e := range snap.KV {
		if err := putOnce(st.KV, e.Key, e, "key"); err != nil {
			return nil, err
		}
	}
	for _, t := range snap.ACLTokens {
		if err := putOnce(st.ACLTokens, t.AccessorID, t, "ACL token"); err != nil {
			return nil, err
		}
	}
	for _, p := range snap.ACLPolicies {
		if err := putOnce(st.ACLPolicies, p.ID, p, "ACL policy"); err != nil {
			return nil, err
		}
	}
	for _, r := range snap.ACLRoles {
		if err := putOnce(st.ACLRoles, r.ID, r, "ACL role"); err != nil {
			return nil, err
		}
	}
	for _, c := range snap.Coordinates {
		if err := putOnce(st.Coordinates, model.CoordKey{Node: c.Node, Segment: c.Segment}, c.Coord, "coordinate"); err != nil {
			return nil, err
		}
	}
	s, err := model.Restore(st)
	if err != nil {
		return nil, fmt.Errorf("decode snapshot: restored state is inconsistent: %w", err)
	}
	return s, nil
}

func putOnce[K comparable, V any](m map[K]V, k K, v V, what string) error {
	if _, dup := m[k]; dup {
		return fmt.Errorf("decode snapshot: %s %v listed twice", what, k)
	}
	m[k] = v
	return nil
}

// decode decodes exactly one msgpack value that must fill data completely.
func (c *wireCodec) decode(data []byte, target any) (err error) {
	defer func() {
		// The decoder reports malformed input as errors, but a panic here
		// would take down every replica applying the entry, so be certain.
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed msgpack: %v", r)
		}
	}()
	dec, _ := c.decoders.Get().(*codec.Decoder)
	if dec == nil {
		dec = codec.NewDecoderBytes(data, c.h)
	} else {
		dec.ResetBytes(data)
	}
	if err := dec.Decode(target); err != nil {
		// Not pooled: a decoder that failed (or panicked) part-way may hold state.
		return err
	}
	n := dec.NumBytesRead()
	dec.ResetBytes(nil) // drop the reference to data before pooling
	c.decoders.Put(dec)
	if n != len(data) {
		return fmt.Errorf("%d trailing bytes after the value", len(data)-n)
	}
	return nil
}
