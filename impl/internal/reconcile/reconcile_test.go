package reconcile

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tenurekv/tenure/model"
)

// TestReconcile runs testdata/*.txt. Commands:
//
//	node name=N [addr=A] [serf=passing|critical] [id=I] [meta=k:v]
//	                                               register a node directly
//	session id=S node=N [checks=c1,c2]             create a session
//	member name=N [addr=A] status=S [self=L] [id=I] [version=V] [raft=H:P]
//	       [meanwhile=k:v]                         decide for one member (a
//	                                               server with raft=) and
//	                                               apply the write, if any;
//	                                               with meanwhile, the agent
//	                                               writes its record with
//	                                               that meta between the
//	                                               decision and the write
//	unknown [members=a,b]                          nodes gossip does not know
func TestReconcile(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		st := model.New()
		var index uint64
		apply := func(d *datadriven.TestData, cmd model.Command) model.Result {
			index++
			res := st.Apply(index, cmd)
			if res.Failed() {
				d.Fatalf(t, "apply %+v: %v", cmd, res.Err)
			}
			return res
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(key, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == key && len(a.Vals) > 0 {
						return strings.Join(a.Vals, ",")
					}
				}
				return def
			}
			switch d.Cmd {
			case "node":
				reg := &model.Register{Node: arg("name", ""), Address: arg("addr", ""), ID: arg("id", "")}
				if kv := arg("meta", ""); kv != "" {
					k, v, _ := strings.Cut(kv, ":")
					reg.NodeMeta = map[string]string{k: v}
				}
				if s := arg("serf", ""); s != "" {
					reg.Checks = []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: CheckName, Status: model.Health(s)}}
				}
				apply(d, model.Command{Register: reg})
				return ""
			case "session":
				cs := &model.CreateSession{ID: arg("id", ""), Node: arg("node", ""), Checks: []string{}}
				if c := arg("checks", ""); c != "" {
					cs.Checks = strings.Split(c, ",")
				}
				apply(d, model.Command{CreateSession: cs})
				return ""
			case "member":
				m := Member{Name: arg("name", ""), Address: arg("addr", ""), Status: parseStatus(t, d, arg("status", "")),
					ID: arg("id", ""), Version: arg("version", ""), RaftAddr: arg("raft", "")}
				if m.RaftAddr != "" {
					m.Server, m.ProtocolMin, m.ProtocolMax, m.ProtocolCur = true, 1, 5, 2
				}
				cmd, ok := Decide(st, m, arg("self", ""))
				if !ok {
					return "no write\n"
				}
				if kv := arg("meanwhile", ""); kv != "" {
					k, v, _ := strings.Cut(kv, ":")
					apply(d, model.Command{Register: &model.Register{Node: m.Name, Address: m.Address, ID: m.ID,
						NodeMeta: map[string]string{k: v}}})
				}
				res := apply(d, cmd)
				out := describe(cmd)
				if r := cmd.Register; r != nil && r.KeepRecord {
					// What the write kept is in the state, not the command.
					n, _ := st.Node(r.Node)
					out += fmt.Sprintf("  now id=%q meta=%v tagged=%v\n", n.ID, n.Meta, n.TaggedAddresses)
				}
				if len(res.Invalidated) > 0 {
					out += fmt.Sprintf("invalidated %s\n", strings.Join(res.Invalidated, ","))
				}
				return out
			case "unknown":
				known := map[string]bool{}
				for _, n := range strings.Split(arg("members", ""), ",") {
					known[n] = true
				}
				var b strings.Builder
				for _, m := range Unknown(st, func(n string) bool { return known[n] }) {
					fmt.Fprintf(&b, "%s %s\n", m.Name, m.Status)
				}
				if b.Len() == 0 {
					return "none\n"
				}
				return b.String()
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func parseStatus(t *testing.T, d *datadriven.TestData, s string) Status {
	for _, st := range []Status{Alive, Leaving, Left, Failed, Reaped} {
		if st.String() == s {
			return st
		}
	}
	d.Fatalf(t, "unknown status %q", s)
	return 0
}

func describe(cmd model.Command) string {
	switch {
	case cmd.Register != nil:
		r := cmd.Register
		var checks []string
		for _, c := range r.Checks {
			checks = append(checks, fmt.Sprintf("%s=%s (%s) %q", c.CheckID, c.Status, c.Name, c.Output))
		}
		node := ""
		if r.ID != "" {
			node += fmt.Sprintf(" id=%q", r.ID)
		}
		if r.NodeMeta != nil {
			node += fmt.Sprintf(" meta=%v", r.NodeMeta)
		}
		if r.SkipNodeUpdate {
			node += " skip-node-update"
		}
		if r.KeepRecord {
			node += " keep-record"
		}
		out := fmt.Sprintf("register %s address=%q%s %s\n", r.Node, r.Address, node, strings.Join(checks, " "))
		for _, sv := range r.Services {
			out += fmt.Sprintf("  service %s (%s) port=%d meta=%v\n", sv.ID, sv.Service, sv.Port, sv.Meta)
		}
		return out
	case cmd.Deregister != nil:
		return fmt.Sprintf("deregister %s\n", cmd.Deregister.Node)
	}
	return fmt.Sprintf("%+v\n", cmd)
}

// TestStatusNames: every status prints as serf names it, and an unknown
// value is not mistaken for one.
func TestStatusNames(t *testing.T) {
	want := map[Status]string{Alive: "alive", Leaving: "leaving", Left: "left", Failed: "failed", Reaped: "reaped", 0: "unknown"}
	for s, name := range want {
		if s.String() != name {
			t.Errorf("%d prints %q, want %q", int(s), s.String(), name)
		}
	}
}

// TestAliveWriteKeepsARecordWrittenMeanwhile (S63): the leader decides an
// alive member's write on one state and commits it later. An agent's
// record committed in between must survive that write, whether the node
// is left alone (the same address and ID) or written (a new address). With
// the node copied into the write (as Consul's leader copies it), the record
// fell back to the copy: the simulator's agent-node-record check caught it
// (seed 81126).
func TestAliveWriteKeepsARecordWrittenMeanwhile(t *testing.T) {
	const id = "4f5a3c1e-0000-4000-8000-000000000001"
	for _, tc := range []struct {
		name, memberAddr string
	}{
		{"same address", "10.0.0.1"},
		{"new address", "10.0.0.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := model.New()
			mustApply := func(index uint64, cmd model.Command) {
				t.Helper()
				if res := st.Apply(index, cmd); res.Failed() {
					t.Fatalf("apply %+v: %v", cmd, res.Err)
				}
			}
			mustApply(1, model.Command{Register: &model.Register{Node: "n1", ID: id, Address: "10.0.0.1",
				NodeMeta: map[string]string{"consul-version": "1.22.7"},
				Checks:   []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: CheckName, Status: model.HealthCritical}}}})
			write, ok := Decide(st, Member{Name: "n1", ID: strings.ToUpper(id), Address: tc.memberAddr, Status: Alive}, "leader")
			if !ok {
				t.Fatal("no write for a member whose serfHealth is critical")
			}
			// The agent's own record lands between the decision and its commit.
			record := map[string]string{"consul-network-segment": "", "rack": "r1"}
			mustApply(2, model.Command{Register: &model.Register{Node: "n1", ID: id, Address: tc.memberAddr,
				TaggedAddresses: map[string]string{"lan": tc.memberAddr}, NodeMeta: record}})
			mustApply(3, write)
			n, _ := st.Node("n1")
			if !maps.Equal(n.Meta, record) || n.TaggedAddresses["lan"] != tc.memberAddr {
				t.Fatalf("the alive write took the agent's record back: meta %v, tagged addresses %v", n.Meta, n.TaggedAddresses)
			}
			if n.Address != tc.memberAddr || !strings.EqualFold(n.ID, id) {
				t.Fatalf("node is %s %s, want %s %s", n.Address, n.ID, tc.memberAddr, id)
			}
			if c, _ := st.Check(model.CheckKey{Node: "n1", CheckID: model.SerfHealthCheckID}); c.Status != model.HealthPassing {
				t.Fatalf("serfHealth is %s, want passing", c.Status)
			}
		})
	}
}
