package fsm

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/tenurekv/tenure/model"
)

// everyCommand has one command of each kind with every field set, so a
// field the codec forgot would show up as a round-trip difference.
func everyCommand() []model.Command {
	return []model.Command{
		{Register: &model.Register{Node: "n1", ID: "4f5a3c1e-0000-4000-8000-000000000001", Address: "127.0.0.1:8500",
			TaggedAddresses: map[string]string{"lan": "127.0.0.1"}, NodeMeta: map[string]string{"rack": "r1"},
			SkipNodeUpdate: true,
			Services: []model.ServiceSpec{{ID: "db1", Service: "db", Tags: []string{"primary", "v2"},
				Address: "10.0.0.5", Port: 5432, Meta: map[string]string{"zone": "a"}, ServiceDetails: everyDetail}},
			Checks: []model.CheckSpec{
				{CheckID: "serfHealth", Name: "Serf Health Status", Status: model.HealthPassing},
				{CheckID: "db", Name: "db", Status: model.HealthCritical, Notes: "n", Output: "refused",
					ServiceID: "db1", Type: "tcp"},
			}}},
		{Deregister: &model.Deregister{Node: "n1", ServiceID: "db1", CheckID: "db"}},
		{CreateSession: &model.CreateSession{ID: "0b5d7c5e-0000-4000-8000-000000000001", Name: "lock",
			Node: "n1", Checks: []string{"serfHealth", "db"}, NodeChecks: []string{"serfHealth"},
			ServiceChecks: []model.ServiceCheck{{ID: "db", Namespace: "default"}}, LockDelay: 15 * time.Second,
			Behavior: model.BehaviorDelete, TTL: "30s"}},
		{DestroySession: &model.DestroySession{ID: "0b5d7c5e-0000-4000-8000-000000000001"}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "a/b", Value: []byte{0, 1, 2, 255}, Flags: 1 << 63,
			Index: 42, Session: "s", LockDelaySeen: 17}},
		{Txn: model.KVTxn(
			model.KVOp{Verb: model.KVCheckSequencer, Key: "k", Index: 3, Session: "s"},
			model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")},
			model.KVOp{Verb: model.KVLock, Key: "k", Session: "s", LockDelaySeen: 9},
		)},
		{Txn: &model.Txn{Ops: []model.TxnOp{
			{KV: &model.KVOp{Verb: model.KVLock, Key: "k", Session: "s", LockDelaySeen: 9}},
			{Node: &model.NodeTxnOp{Verb: model.CatalogCAS, Node: "n2", ID: "4f5a3c1e-0000-4000-8000-000000000002",
				Address: "10.0.0.2", TaggedAddresses: map[string]string{"wan": "1.2.3.4"}, Meta: map[string]string{"m": "1"}, Index: 7}},
			{Service: &model.ServiceTxnOp{Verb: model.CatalogSet, Node: "n2", Index: 8, Service: model.ServiceSpec{
				ID: "web1", Service: "web", Tags: []string{"a"}, Address: "10.0.0.3", Port: 80, Meta: map[string]string{"v": "1"},
				ServiceDetails: model.ServiceDetails{TaggedAddresses: map[string]model.ServiceAddress{"wlan": {Address: "10.0.0.4", Port: 81}}}}}},
			{Check: &model.CheckTxnOp{Verb: model.CatalogDeleteCAS, Node: "n2", Index: 9, Check: model.CheckSpec{
				CheckID: "c", Name: "c", Status: model.HealthWarning, Notes: "n", Output: "o", ServiceID: "web1",
				Type: "http", Definition: `{"HTTP":"http://x"}`}}},
			{Session: &model.SessionTxnOp{Verb: model.SessionDelete, ID: "0b5d7c5e-0000-4000-8000-000000000001"}},
		}}},
		{Reap: &model.Reap{Index: 12}},
		{Query: &model.QueryOp{Op: model.QueryUpdate, Query: model.PreparedQuery{
			ID: "0b5d7c5e-0000-4000-8000-000000000002", Name: "db", Session: "s", Token: "t",
			Service: model.ServiceQuery{Service: "db",
				Failover:    model.QueryFailover{NearestN: 2, Datacenters: []string{"dc2"}, Targets: []model.QueryTarget{{Peer: "p", Datacenter: "dc3"}}},
				OnlyPassing: true, IgnoreCheckIDs: []string{"serfHealth"}, Near: "_agent", Tags: []string{"!v1"},
				NodeMeta: map[string]string{"rack": "1"}, ServiceMeta: map[string]string{"zone": "a"}},
			DNS: model.QueryDNS{TTL: "10s"}, CreateIndex: 3, ModifyIndex: 4}}},
		{ACL: &model.ACLOp{Verb: model.ACLTokenSet, Create: true, ID: "x", ResetIndex: 5,
			Token: &model.ACLToken{AccessorID: "a", SecretID: "s", Description: "d", Policies: []string{"p"}, Roles: []string{"r"},
				ServiceIdentities: []model.ACLServiceIdentity{{ServiceName: "web", Datacenters: []string{"dc1"}}},
				NodeIdentities:    []model.ACLNodeIdentity{{NodeName: "n1", Datacenter: "dc1"}}, Local: true, CreateTime: 99},
			Policy: &model.ACLPolicy{ID: "p", Name: "n", Description: "d", Rules: `acl = "read"`, Datacenters: []string{"dc1"}},
			Role: &model.ACLRole{ID: "r", Name: "n", Description: "d", Policies: []string{"p"},
				ServiceIdentities: []model.ACLServiceIdentity{{ServiceName: "web"}}, NodeIdentities: []model.ACLNodeIdentity{{NodeName: "n", Datacenter: "dc"}}}}},
		{Coordinates: &model.CoordinateBatch{Updates: []model.Coordinate{{Node: "n1", Segment: "s",
			Coord: model.Coord{Vec: []float64{0.001, -0.002}, Error: 1.5, Adjustment: -0.0001, Height: 0.00001}}}}},
	}
}

// everyDetail sets every field of a service's details (S74).
var everyDetail = model.ServiceDetails{Kind: "connect-proxy",
	TaggedAddresses: map[string]model.ServiceAddress{"lan": {Address: "10.0.0.5", Port: 5432}},
	Ports:           []model.ServicePort{{Name: "http", Port: 80, Default: true}, {Name: "admin", Port: 81}},
	SocketPath:      "/tmp/db.sock", Weights: &model.Weights{Passing: 3, Warning: 0}, EnableTagOverride: true,
	Locality: &model.Locality{Region: "r", Zone: "z"}, Proxy: `{"DestinationServiceName":"db","Mode":""}`}

// TestOldServiceEntriesDecode: a register and a snapshot written before
// services had details (S74) decode, with every detail zero: a typical
// service with Consul's defaults.
func TestOldServiceEntriesDecode(t *testing.T) {
	type oldSpec struct {
		ID      string
		Service string
		Tags    []string          `json:",omitempty"`
		Address string            `json:",omitempty"`
		Port    int               `json:",omitempty"`
		Meta    map[string]string `json:",omitempty"`
	}
	type oldRegister struct {
		Node     string
		Address  string
		Services []oldSpec `json:",omitempty"`
	}
	c := newWireCodec()
	var buf []byte
	if err := codec.NewEncoderBytes(&buf, c.h).Encode(oldRegister{Node: "n1", Address: "a",
		Services: []oldSpec{{ID: "w", Service: "web", Port: 80}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.decodeCommand(append([]byte{commandVersion, cmdRegister}, buf...))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Register{Node: "n1", Address: "a", Services: []model.ServiceSpec{{ID: "w", Service: "web", Port: 80}}}
	if diff := cmp.Diff(want, *got.Register, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("old register (-want +got):\n%s", diff)
	}

	type oldService struct {
		Node, ServiceID, Service string
		Port                     int
		CreateIndex, ModifyIndex uint64
	}
	type oldSnapshot struct {
		Nodes    []model.Node
		Tables   model.TableIndexes
		Services []oldService
	}
	buf = nil
	if err := codec.NewEncoderBytes(&buf, c.h).Encode(oldSnapshot{Nodes: []model.Node{{Name: "n1", CreateIndex: 1, ModifyIndex: 1}},
		Tables:   model.TableIndexes{Nodes: 1, Services: 2},
		Services: []oldService{{Node: "n1", ServiceID: "w", Service: "web", Port: 80, CreateIndex: 2, ModifyIndex: 2}}}); err != nil {
		t.Fatal(err)
	}
	st, err := c.decodeSnapshot(append([]byte{snapshotVersion}, buf...))
	if err != nil {
		t.Fatal(err)
	}
	sv, ok := st.Service(model.ServiceKey{Node: "n1", ServiceID: "w"})
	if !ok || sv.Port != 80 || !sv.ServiceDetails.IsZero() {
		t.Errorf("old snapshot's service: %+v (found %v)", sv, ok)
	}
}

// TestEveryCommandKindIsCovered: everyCommand has each variant, so a new
// command the codec does not know fails TestCommandRoundTrip.
func TestEveryCommandKindIsCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, cmd := range everyCommand() {
		kind, err := cmd.Kind()
		if err != nil {
			t.Fatal(err)
		}
		seen[kind] = true
	}
	for _, kind := range []string{"register", "deregister", "create-session", "destroy-session", "kv", "txn", "reap", "query", "acl"} {
		if !seen[kind] {
			t.Errorf("everyCommand has no %s command", kind)
		}
	}
}

func TestCommandRoundTrip(t *testing.T) {
	c := newWireCodec()
	for _, cmd := range everyCommand() {
		kind, _ := cmd.Kind()
		data, err := c.encodeCommand(cmd)
		if err != nil {
			t.Fatalf("%s: encode: %v", kind, err)
		}
		got, err := c.decodeCommand(data)
		if err != nil {
			t.Fatalf("%s: decode: %v", kind, err)
		}
		if diff := cmp.Diff(cmd, got); diff != "" {
			t.Errorf("%s: round trip differs (-want +got):\n%s", kind, diff)
		}
	}
}

// TestReusedCodecKeepsNoState: encoders and decoders are pooled, so one
// command's bytes or fields must never leak into the next, even after a
// decode that failed part-way. Each command is encoded on a codec that has
// handled every other kind (and bad entries) first, and must give the same
// bytes as on a fresh codec and decode back to itself.
func TestReusedCodecKeepsNoState(t *testing.T) {
	reused := newWireCodec()
	cmds := everyCommand()
	for round := range 3 {
		for i := range cmds {
			// Walk the kinds in a different order each round: large after
			// small and small after large.
			cmd := cmds[(i*(round+1))%len(cmds)]
			kind, _ := cmd.Kind()
			fresh, err := newWireCodec().encodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			got, err := reused.encodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, fresh) {
				t.Fatalf("round %d, %s: reused encoder wrote %x, fresh %x", round, kind, got, fresh)
			}
			if _, err := reused.decodeCommand(got); err != nil {
				t.Fatalf("round %d, %s: %v", round, kind, err)
			}
			if _, err := reused.decodeCommand(append(got[:len(got):len(got)], 0xc1)); err == nil {
				t.Fatalf("%s: trailing garbage decoded", kind)
			}
			if _, err := reused.decodeCommand(got[:len(got)-1]); err == nil {
				t.Fatalf("%s: truncated entry decoded", kind)
			}
			back, err := reused.decodeCommand(got)
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, kind, err)
			}
			if diff := cmp.Diff(cmd, back); diff != "" {
				t.Fatalf("round %d, %s: round trip on a reused codec differs (-want +got):\n%s", round, kind, diff)
			}
		}
	}
}

// TestNodeMapsKeepEmptyApartFromNil: Consul answers a node registered with
// empty meta with {} and one registered without with null (S62), so an
// entry must bring back which it was.
func TestNodeMapsKeepEmptyApartFromNil(t *testing.T) {
	c := newWireCodec()
	for _, reg := range []model.Register{
		{Node: "n1", Address: "a1", NodeMeta: map[string]string{}},
		{Node: "n1", Address: "a1", TaggedAddresses: map[string]string{}},
		{Node: "n1", Address: "a1"},
	} {
		data, err := c.encodeCommand(model.Command{Register: &reg})
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		got, err := c.decodeCommand(data)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if diff := cmp.Diff(reg, *got.Register); diff != "" {
			t.Errorf("round trip differs (-want +got):\n%s", diff)
		}
	}
}

func TestEncodeRefusesMalformedCommand(t *testing.T) {
	c := newWireCodec()
	if _, err := c.encodeCommand(model.Command{}); err == nil {
		t.Error("empty command encoded")
	}
	two := model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k"}, DestroySession: &model.DestroySession{ID: "x"}}
	if _, err := c.encodeCommand(two); err == nil {
		t.Error("command with two variants encoded")
	}
}

func TestDecodeRejectsBadEntries(t *testing.T) {
	c := newWireCodec()
	good, err := c.encodeCommand(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "k", Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	withVersion := func(v byte) []byte { b := append([]byte(nil), good...); b[0] = v; return b }
	withType := func(v byte) []byte { b := append([]byte(nil), good...); b[1] = v; return b }
	cases := []struct {
		name string
		data []byte
		want error  // errors.Is target, if any
		text string // substring of the message
	}{
		{"nil", nil, nil, "too short"},
		{"one byte", []byte{commandVersion}, nil, "too short"},
		{"future version", withVersion(2), errUnknownVersion, "unknown encoding version 2"},
		{"version zero", withVersion(0), errUnknownVersion, "unknown encoding version 0"},
		{"unknown type", withType(99), errUnknownCommand, "unknown command type 99"},
		{"type zero", withType(0), errUnknownCommand, "unknown command type 0"},
		{"truncated payload", good[:len(good)-2], nil, "decode command type 5"},
		{"trailing bytes", append(append([]byte(nil), good...), 0xc0), nil, "trailing"},
		{"not msgpack", []byte{commandVersion, cmdKV, 0xc1, 0xc1}, nil, "decode command type 5"},
		{"wrong shape", []byte{commandVersion, cmdKV, 0x2a}, nil, "decode command type 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.decodeCommand(tc.data)
			if err == nil {
				t.Fatal("decoded without error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %q is not %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not mention %q", err, tc.text)
			}
		})
	}
}

// buildState applies a small but complete history: nodes, checks, sessions,
// held and released keys, a deletion (tombstone) and a re-created key.
func buildState(t *testing.T) *model.State {
	t.Helper()
	s := model.New()
	cmds := []model.Command{
		{Register: &model.Register{Node: "n1", Address: "a1", Checks: []model.CheckSpec{
			{CheckID: "serfHealth", Name: "Serf", Status: model.HealthPassing},
			{CheckID: "db", Name: "db", Status: model.HealthWarning}}}},
		{Register: &model.Register{Node: "n2", ID: "4f5a3c1e-0000-4000-8000-000000000002", Address: "a2",
			TaggedAddresses: map[string]string{"wan": "198.51.100.2"}, NodeMeta: map[string]string{"rack": "r2"}}},
		{CreateSession: &model.CreateSession{ID: "s1", Node: "n1", Checks: []string{"serfHealth"}, LockDelay: time.Second, TTL: "10s"}},
		{CreateSession: &model.CreateSession{ID: "s2", Node: "n2", Behavior: model.BehaviorDelete}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "lock/a", Value: []byte("x"), Session: "s1"}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "lock/b", Session: "s2", Flags: 7}},
		{KV: &model.KVOp{Verb: model.KVSet, Key: "plain", Value: []byte{}}},
		{KV: &model.KVOp{Verb: model.KVDelete, Key: "plain"}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "gone", Session: "s2"}},
		{KV: &model.KVOp{Verb: model.KVDelete, Key: "gone"}},
		{CreateSession: &model.CreateSession{ID: "s3", Node: "n2", LockDelay: 5 * time.Second}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "delayed", Session: "s3"}},
		{DestroySession: &model.DestroySession{ID: "s3"}},
		{Register: &model.Register{Node: "n1", Address: "a1",
			Services: []model.ServiceSpec{{ID: "web1", Service: "web", Tags: []string{"v1"}, Port: 80, Meta: map[string]string{"z": "a"},
				ServiceDetails: everyDetail}},
			Checks: []model.CheckSpec{{CheckID: "web-http", Name: "http", Status: model.HealthPassing, ServiceID: "web1", Type: "http", Output: "200 OK"}}}},
		{CreateSession: &model.CreateSession{ID: "s4", Node: "n1", NodeChecks: []string{"serfHealth"},
			ServiceChecks: []model.ServiceCheck{{ID: "web-http"}}}},
		{Query: &model.QueryOp{Op: model.QueryCreate, Query: model.PreparedQuery{ID: "q1", Name: "web", Session: "s4",
			Service: model.ServiceQuery{Service: "web", Tags: []string{"v1"}, OnlyPassing: true}, DNS: model.QueryDNS{TTL: "5s"}}}},
		{Coordinates: &model.CoordinateBatch{Updates: []model.Coordinate{
			{Node: "n1", Coord: model.Coord{Vec: []float64{0.001, 0}, Error: 0.5, Height: 0.00001}},
			{Node: "n2", Segment: "alpha", Coord: model.Coord{Vec: []float64{0, 0.002}, Error: 1.5, Adjustment: 0.0001}}}}},
		{ACL: &model.ACLOp{Verb: model.ACLPolicySet, Create: true, Policy: &model.ACLPolicy{ID: "p1", Name: "ops", Rules: `key_prefix "" { policy = "read" }`, Datacenters: []string{"dc1"}}}},
		{ACL: &model.ACLOp{Verb: model.ACLRoleSet, Create: true, Role: &model.ACLRole{ID: "r1", Name: "ops", Policies: []string{"p1"},
			NodeIdentities: []model.ACLNodeIdentity{{NodeName: "n1", Datacenter: "dc1"}}}}},
		{ACL: &model.ACLOp{Verb: model.ACLBootstrap, Token: &model.ACLToken{AccessorID: "a1", SecretID: "sec1", Description: "boot",
			Policies: []string{"p1"}, Roles: []string{"r1"}, ServiceIdentities: []model.ACLServiceIdentity{{ServiceName: "web"}}, CreateTime: 7}}},
	}
	for i, cmd := range cmds {
		if res := s.Apply(uint64(i+1)*3, cmd); res.Failed() {
			t.Fatalf("setup command %d failed: %+v", i, res)
		}
	}
	if snap := s.Snapshot(); len(snap.DelayedAt) == 0 || len(snap.Tombstones) == 0 || len(snap.LockIssued) == 0 ||
		len(snap.Services) == 0 || len(snap.Queries) == 0 || len(snap.ACLTokens) == 0 || len(snap.ACLRoles) == 0 || snap.ACLBootstrapIndex == 0 {
		t.Fatalf("setup does not cover every table: %+v", s)
	}
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	c := newWireCodec()
	for name, s := range map[string]*model.State{"empty": model.New(), "populated": buildState(t)} {
		data, err := c.encodeSnapshot(s)
		if err != nil {
			t.Fatalf("%s: encode: %v", name, err)
		}
		got, err := c.decodeSnapshot(data)
		if err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if !got.Equal(s) {
			t.Errorf("%s: restored state differs:\n%s", name, cmp.Diff(s, got, cmpopts.EquateEmpty()))
		}
		if got.Hash() != s.Hash() {
			t.Errorf("%s: hash %x != %x", name, got.Hash(), s.Hash())
		}
	}
}

// TestSnapshotEqualityDetectsDifference shows the round-trip check above can
// fail: a state that differs in one field is not Equal after restore.
func TestSnapshotEqualityDetectsDifference(t *testing.T) {
	c := newWireCodec()
	s := buildState(t)
	snap := s.Snapshot()
	e := snap.KV["lock/a"]
	e.Flags++
	snap.KV["lock/a"] = e
	other := model.RestoreUnchecked(snap)
	data, err := c.encodeSnapshot(other)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Equal(s) {
		t.Fatal("states differing in one flag compare equal")
	}
}

func TestDecodeSnapshotRejectsBadInput(t *testing.T) {
	c := newWireCodec()
	good, err := c.encodeSnapshot(buildState(t))
	if err != nil {
		t.Fatal(err)
	}
	// A key held by a session the snapshot does not contain breaks the
	// holder-exists invariant; restore must refuse it rather than load it.
	snap := buildState(t).Snapshot()
	delete(snap.Sessions, "s1")
	bad := model.RestoreUnchecked(snap)
	inconsistent, err := c.encodeSnapshot(bad)
	if err != nil {
		t.Fatal(err)
	}
	future := append([]byte(nil), good...)
	future[0] = 9
	cases := map[string][]byte{
		"empty":        nil,
		"future":       future,
		"truncated":    good[:len(good)/2],
		"inconsistent": inconsistent,
	}
	// A record listed twice would let the second silently replace the
	// first; each table is tried on its own.
	st := buildState(t)
	for table, dup := range map[string]func(s *snapshotV1){
		"node":    func(s *snapshotV1) { s.Nodes = append(s.Nodes, s.Nodes[0]) },
		"check":   func(s *snapshotV1) { s.Checks = append(s.Checks, s.Checks[0]) },
		"session": func(s *snapshotV1) { s.Sessions = append(s.Sessions, s.Sessions[0]) },
		"key":     func(s *snapshotV1) { s.KV = append(s.KV, s.KV[0]) },
		"service": func(s *snapshotV1) { s.Services = append(s.Services, s.Services[0]) },
		"query":   func(s *snapshotV1) { s.Queries = append(s.Queries, s.Queries[0]) },
	} {
		raw := snapshotV1{Nodes: st.NodeList(), Checks: st.CheckList("", ""), Sessions: st.SessionList(""), KV: st.List(""),
			Tables: st.Tables(), LockIssued: st.Snapshot().LockIssued, Services: st.ServiceList(""), Queries: st.QueryList()}
		dup(&raw)
		var buf bytes.Buffer
		buf.WriteByte(snapshotVersion)
		if err := codec.NewEncoder(&buf, c.h).Encode(&raw); err != nil {
			t.Fatal(err)
		}
		cases["duplicate "+table] = buf.Bytes()
	}
	for name, data := range cases {
		_, err := c.decodeSnapshot(data)
		if err == nil {
			t.Errorf("%s: decoded without error", name)
		} else if strings.HasPrefix(name, "duplicate") && !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("%s: %v, want the duplicate named", name, err)
		}
	}
}

// TestKVTxnKeepsItsOldEncoding: a txn of KV ops only is written as every
// binary before catalog ops in txns wrote it (type 6, its ops as a list of
// KV ops), so older servers in the cluster still read it and entries
// already in logs still decode; one with a catalog or session op gets type
// 10, which an older binary reports as unknown instead of misreading.
func TestKVTxnKeepsItsOldEncoding(t *testing.T) {
	ops := []model.KVOp{{Verb: model.KVSet, Key: "k", Value: []byte("v")}, {Verb: model.KVLock, Key: "k", Session: "s", LockDelaySeen: 3}}
	var old []byte
	if err := codec.NewEncoderBytes(&old, &codec.MsgpackHandle{}).Encode(struct{ Ops []model.KVOp }{ops}); err != nil {
		t.Fatal(err)
	}
	old = append([]byte{commandVersion, cmdTxn}, old...)
	c := newWireCodec()
	got, err := c.decodeCommand(old)
	if err != nil {
		t.Fatalf("old txn entry: %v", err)
	}
	if diff := cmp.Diff(model.Command{Txn: model.KVTxn(ops...)}, got); diff != "" {
		t.Errorf("old txn entry decoded (-want +got):\n%s", diff)
	}
	now, err := c.encodeCommand(model.Command{Txn: model.KVTxn(ops...)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(now, old) {
		t.Errorf("KV txn encoded as %x, older binaries wrote %x", now, old)
	}
	mixed, err := c.encodeCommand(model.Command{Txn: &model.Txn{Ops: []model.TxnOp{{Session: &model.SessionTxnOp{Verb: model.SessionDelete, ID: "s"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if mixed[1] != cmdTxnOps {
		t.Errorf("txn with a session op has type %d, want %d", mixed[1], cmdTxnOps)
	}
}

// TestSnapshotWithoutACLTablesDecodes: a snapshot written before the ACL
// tables existed (no ACL fields in its msgpack map) restores with empty
// tables and no bootstrap, so an upgraded server reads its old snapshots.
func TestSnapshotWithoutACLTablesDecodes(t *testing.T) {
	c := newWireCodec()
	s := buildState(t)
	// The snapshot as an older server wrote it: the same map without the
	// ACL keys.
	type preACL struct {
		Nodes         []model.Node
		Checks        []model.Check
		Sessions      []model.Session
		KV            []model.KVEntry
		Tombstones    map[string]uint64
		LockIssued    map[string]uint64
		DelayedAt     map[string]uint64
		Tables        model.TableIndexes
		LockFloor     uint64
		ReapedThrough uint64
		Services      []model.Service
		Queries       []model.PreparedQuery
	}
	st := s.Snapshot()
	old := preACL{Nodes: s.NodeList(), Checks: s.CheckList("", ""), Sessions: s.SessionList(""), KV: s.List(""),
		Tombstones: st.Tombstones, LockIssued: st.LockIssued, DelayedAt: st.DelayedAt, Tables: st.Tables,
		LockFloor: st.LockFloor, ReapedThrough: st.ReapedThrough, Services: s.ServiceList(""), Queries: s.QueryList()}
	old.Tables.ACLTokens, old.Tables.ACLPolicies, old.Tables.ACLRoles, old.Tables.Coordinates = 0, 0, 0, 0
	var buf bytes.Buffer
	buf.WriteByte(snapshotVersion)
	if err := codec.NewEncoder(&buf, c.h).Encode(&old); err != nil {
		t.Fatal(err)
	}
	got, err := c.decodeSnapshot(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.CoordinateList()) == 0 || len(got.CoordinateList()) != 0 {
		t.Fatalf("old snapshot restored coordinates %+v (the state had %d)", got.CoordinateList(), len(s.CoordinateList()))
	}
	if len(got.ACLTokenList()) != 0 || len(got.ACLPolicyList()) != 0 || got.ACLBootstrapIndex() != 0 {
		t.Fatalf("old snapshot restored ACL records: %+v", got.ACLTokenList())
	}
	if got.List("")[0].Key != s.List("")[0].Key || len(got.SessionList("")) != len(s.SessionList("")) {
		t.Fatal("old snapshot lost its other tables")
	}
}
