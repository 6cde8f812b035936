package checks

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/internal/core"
)

const (
	c1Secret   = "6f1c2a3b-0000-4000-8000-000000000001"
	mgmtSecret = "6f1c2a3b-0000-4000-8000-0000000000ff"
)

// aclTB is a trace builder of a run with ACLs on, default deny, whose one
// client c1 may write key "k" and create sessions on node "a1".
func aclTB() *tb {
	b := newTB()
	b.ev[0].Run.ACL = &core.ACLSetup{DefaultPolicy: "deny", Management: mgmtSecret, Tokens: map[string]core.ACLToken{
		"c1": {AccessorID: "6f1c2a3b-0000-4000-8000-000000000002", SecretID: c1Secret,
			Rules: "key \"k\" { policy = \"write\" }\nsession \"a1\" { policy = \"write\" }\n"},
	}}
	return b
}

func runACL(t *testing.T, events []core.Event) ([]Violation, int) {
	t.Helper()
	vs, n, err := RunCheckCounted(CheckACLEnforced, events)
	if err != nil {
		t.Fatal(err)
	}
	return vs, n
}

// TestACLEnforcedPassesWhatTheTokenAllows: allowed requests applied,
// forbidden ones refused with 403, the management token's requests: no
// violation, and each applied request is counted.
func TestACLEnforcedPassesWhatTheTokenAllows(t *testing.T) {
	b := aclTB()
	b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, Token: c1Secret, KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}, core.Ret{Status: 200, OK: true})
	b.op(sec(2), sec(2.1), "c1", core.Call{Req: core.ReqCreate, Token: c1Secret, Create: &model.CreateSession{Node: "a1"}}, core.Ret{Status: 200, SessionID: "s1"})
	b.op(sec(3), sec(3.1), "c1", core.Call{Req: core.ReqKV, Token: c1Secret, KV: &model.KVOp{Verb: model.KVSet, Key: "acl/forbidden/c1"}},
		core.Ret{Outcome: core.OutFail, Status: 403})
	b.op(sec(4), sec(4.1), "c1", core.Call{Req: core.ReqCreate, Token: c1Secret, Create: &model.CreateSession{Node: "n1"}},
		core.Ret{Outcome: core.OutFail, Status: 403})
	b.op(sec(5), sec(5.1), "prober", core.Call{Req: core.ReqKV, Token: mgmtSecret, KV: &model.KVOp{Verb: model.KVSet, Key: "anything"}}, core.Ret{Status: 200, OK: true})
	b.obs(sec(6), "n1", true, core.StateObs{Index: 9, Keys: []core.KeyChange{{Key: "k", After: entry("k", "s1", 1, 9)}}})
	vs, n := runACL(t, b.end(sec(7)))
	if len(vs) != 0 {
		t.Fatalf("violations: %v", vs)
	}
	if n != 4 {
		t.Fatalf("judged %d, want 4 (two applied requests of c1, the prober's, one acquire)", n)
	}
	// Without ACLs the check judges nothing.
	plain := newTB()
	plain.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "x"}}, core.Ret{Status: 200, OK: true})
	if vs, n := runACL(t, plain.end(sec(2))); len(vs) != 0 || n != 0 {
		t.Fatalf("run without ACLs: %d judged, %v", n, vs)
	}
}

// TestACLEnforcedFailsForgedHistories: the check's teeth. Each history has
// one thing applied that c1's token does not allow, as a server that does
// not enforce would leave it; each must fail, naming the permission.
func TestACLEnforcedFailsForgedHistories(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *tb)
		want  string
	}{
		{"write of an unnamed key", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, Token: c1Secret, KV: &model.KVOp{Verb: model.KVSet, Key: "acl/forbidden/c1"}}, core.Ret{Status: 200, OK: true})
		}, `'key:write' on "acl/forbidden/c1"`},
		{"session on another node", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Token: c1Secret, Create: &model.CreateSession{Node: "n1"}}, core.Ret{Status: 200, SessionID: "s9"})
		}, `'session:write' on "n1"`},
		{"read of another key", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqGet, Token: c1Secret, Key: "lock/other"}, core.Ret{Status: 200, Found: true})
		}, `'key:read' on "lock/other"`},
		{"listing returning an unreadable key", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, Token: c1Secret, KV: &model.KVOp{Verb: model.KVGet, Key: "k"}},
				core.Ret{Status: 200, Entries: []model.KVEntry{{Key: "k"}, {Key: "secret"}}})
		}, `'key:read' on "secret"`},
		{"anonymous write", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}, core.Ret{Status: 200, OK: true})
		}, "anonymous token lacks permission 'key:write'"},
		{"acquire whose answer was lost", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqCreate, Token: c1Secret, Create: &model.CreateSession{Node: "a1"}}, core.Ret{Status: 200, SessionID: "s1"})
			b.op(sec(2), -1, "c1", core.Call{Req: core.ReqKV, Token: c1Secret, KV: &model.KVOp{Verb: model.KVLock, Key: "lock/other", Session: "s1"}}, core.Ret{})
			b.obs(sec(2.5), "n1", true, core.StateObs{Index: 12, Keys: []core.KeyChange{{Key: "lock/other", After: entry("lock/other", "s1", 1, 12)}}})
		}, `'key:write' on "lock/other"`},
		{"unknown token", func(b *tb) {
			b.op(sec(1), sec(1.1), "c1", core.Call{Req: core.ReqKV, Token: "not-a-token", KV: &model.KVOp{Verb: model.KVSet, Key: "k"}}, core.Ret{Status: 200, OK: true})
		}, "ACL not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := aclTB()
			tc.build(b)
			vs, _ := runACL(t, b.end(sec(5)))
			if len(vs) != 1 || !strings.Contains(vs[0].Msg, tc.want) || vs[0].Check != CheckACLEnforced {
				t.Fatalf("violations %v, want one naming %s", vs, tc.want)
			}
		})
	}
}

// TestACLEnforcedSessionGone: a destroy or renew of a session that is
// already gone needs no permission (S85), so another client's token may
// send one; while the session lives, the same destroy is a violation.
func TestACLEnforcedSessionGone(t *testing.T) {
	build := func(goneFirst bool) []core.Event {
		b := aclTB()
		b.obs(sec(1), "n1", true, core.StateObs{Index: 5, NewSess: []model.Session{{ID: "s7", Node: "n2"}}})
		at := sec(3)
		if goneFirst {
			b.obs(sec(2), "n1", true, core.StateObs{Index: 6, GoneSess: []model.Session{{ID: "s7", Node: "n2"}}})
		} else {
			b.obs(sec(4), "n1", true, core.StateObs{Index: 6, GoneSess: []model.Session{{ID: "s7", Node: "n2"}}})
		}
		b.op(at, at+sec(0.1), "c1", core.Call{Req: core.ReqDestroy, Token: c1Secret, ID: "s7"}, core.Ret{Status: 200, OK: true})
		return b.end(sec(5))
	}
	if vs, _ := runACL(t, build(true)); len(vs) != 0 {
		t.Fatalf("destroy of a gone session: %v", vs)
	}
	if vs, _ := runACL(t, build(false)); len(vs) != 1 || !strings.Contains(vs[0].Msg, `'session:write' on "n2"`) {
		t.Fatalf("destroy of a live session on another node: %v", vs)
	}
}
