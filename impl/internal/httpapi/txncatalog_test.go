package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
)

// The shapes below are what Consul 1.22.7 answered the same txns with
// (CONSUL.md §6), indexes aside.

// A txn writes a node, a service and a check through consul/api's own
// types; results come back in Consul's shapes, in op order (S68).
func TestTxnCatalogOpsConsulShapes(t *testing.T) {
	f := newFixture(t)
	ok, resp, _, err := f.client.Txn().Txn(api.TxnOps{
		{Node: &api.NodeTxnOp{Verb: api.NodeSet, Node: api.Node{Node: "n1", Address: "1.1.1.1",
			TaggedAddresses: map[string]string{"wlan": "1.1.1.1"}, Meta: map[string]string{"a": "b"}}}},
		{Service: &api.ServiceTxnOp{Verb: api.ServiceSet, Node: "n1", Service: api.AgentService{ID: "s1", Service: "s1",
			Port: 1, Address: "1.1.1.1", Tags: []string{"t1"}, Meta: map[string]string{"m": "v"},
			TaggedAddresses: map[string]api.ServiceAddress{"wlan": {Address: "1.1.1.1", Port: 1}}}}},
		{Check: &api.CheckTxnOp{Verb: api.CheckSet, Check: api.HealthCheck{Node: "n1", CheckID: "c1", ServiceID: "s1",
			Status: "passing", Type: "tcp", Definition: api.HealthCheckDefinition{TCP: "1.1.1.1:1",
				Interval: api.ReadableDuration(40e9), Timeout: api.ReadableDuration(80e9)}}}},
	}, nil)
	if err != nil || !ok || len(resp.Results) != 3 {
		t.Fatalf("txn: ok=%v %+v %v", ok, resp, err)
	}
	idx := resp.Results[0].Node.CreateIndex
	r := f.do(http.MethodPut, "/v1/txn", []byte(`[{"Node":{"Verb":"get","Node":{"Node":"n1"}}},{"Service":{"Verb":"get","Node":"n1","Service":{"ID":"s1"}}},{"Check":{"Verb":"get","Check":{"Node":"n1","CheckID":"c1"}}}]`))
	wantBody := strings.ReplaceAll(`{"Results":[`+
		`{"Node":{"ID":"","Node":"n1","Address":"1.1.1.1","Datacenter":"dc1","TaggedAddresses":{"wlan":"1.1.1.1"},"Meta":{"a":"b"},"CreateIndex":@,"ModifyIndex":@}},`+
		`{"Service":{"ID":"s1","Service":"s1","Tags":["t1"],"Address":"1.1.1.1","TaggedAddresses":{"wlan":{"Address":"1.1.1.1","Port":1}},"Meta":{"m":"v"},"Port":1,"Weights":{"Passing":1,"Warning":1},"EnableTagOverride":false,"Proxy":{"Mode":"","MeshGateway":{},"Expose":{}},"Connect":{},"PeerName":"","CreateIndex":@,"ModifyIndex":@}},`+
		`{"Check":{"Node":"n1","CheckID":"c1","Name":"","Status":"passing","Notes":"","Output":"","ServiceID":"s1","ServiceName":"s1","ServiceTags":["t1"],"Type":"tcp","Interval":"","Timeout":"","ExposedPort":0,"Definition":{"Interval":"40s","Timeout":"1m20s","TCP":"1.1.1.1:1"},"CreateIndex":@,"ModifyIndex":@}}],`+
		`"Errors":null,"Index":1,"LastContact":0,"KnownLeader":true,"ConsistencyLevel":"","NotModified":false,"Backend":0,"ResultsFilteredByACLs":false}`,
		"@", fmt.Sprint(idx))
	want(t, "read-only catalog txn", r, http.StatusOK, wantBody)

	// A read-only txn's 409 carries the read metadata too; a write txn's
	// does not.
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[{"Node":{"Verb":"get","Node":{"Node":"nope"}}}]`))
	want(t, "read-only txn failing", r, http.StatusConflict, `{"Results":null,"Errors":[{"OpIndex":0,"What":"node \"nope\" doesn't exist"}],"Index":1,"LastContact":0,"KnownLeader":true,"ConsistencyLevel":"","NotModified":false,"Backend":0,"ResultsFilteredByACLs":false}`)
	// A txn with no results answers [] for them, read or write, as Consul's.
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[]`))
	want(t, "empty txn", r, http.StatusOK, `{"Results":[],"Errors":null,"Index":1,"LastContact":0,"KnownLeader":true,"ConsistencyLevel":"","NotModified":false,"Backend":0,"ResultsFilteredByACLs":false}`)
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[{"KV":{"Verb":"delete","Key":"nope"}}]`))
	want(t, "txn of a delete", r, http.StatusOK, `{"Results":[],"Errors":null}`)
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[{"Node":{"Verb":"cas","Node":{"Node":"n1","Address":"2.2.2.2"}}}]`))
	want(t, "node cas at 0 on an existing node", r, http.StatusConflict, `{"Results":null,"Errors":[{"OpIndex":0,"What":"failed to set node \"n1\", index is stale"}]}`)
}

// A critical check set in a txn ends the sessions bound to it, releasing
// their keys, in the txn's write; a failing op later in the txn undoes it
// all (S44, S68).
func TestTxnCriticalCheckInvalidatesOrNothing(t *testing.T) {
	f := newFixture(t)
	reg := `{"Node":"n1","Address":"1.1.1.1","Check":{"CheckID":"alive","Name":"alive","Status":"passing"}}`
	want(t, "register", f.do(http.MethodPut, "/v1/catalog/register", []byte(reg)), http.StatusOK, "true")
	sid := f.session(&api.SessionEntry{Node: "n1", NodeChecks: []string{"alive"}, LockDelay: 1})
	f.acquire("held", sid, "v")
	critical := `{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"alive","Name":"alive","Status":"critical"}}}`
	before := f.b.Store().Hash()
	r := f.do(http.MethodPut, "/v1/txn", []byte(`[`+critical+`,{"Service":{"Verb":"set","Node":"ghost","Service":{"Service":"web"}}}]`))
	want(t, "txn failing after the critical check", r, http.StatusConflict, `{"Results":null,"Errors":[{"OpIndex":1,"What":"Missing node registration"}]}`)
	if f.b.Store().Hash() != before {
		t.Fatal("an aborted txn changed the state")
	}
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[`+critical+`,{"KV":{"Verb":"get","Key":"held"}}]`))
	want(t, "txn setting the check critical", r, http.StatusOK, "")
	got := decode[struct {
		Results []struct {
			KV    *api.KVPair
			Check *api.HealthCheck
		}
	}](t, r)
	if len(got.Results) != 2 || got.Results[0].Check.Status != "critical" || got.Results[1].KV.Session != "" {
		t.Fatalf("results %s: want the critical check, then the key released", r.text())
	}
	if e, _, _ := f.client.Session().Info(sid, nil); e != nil {
		t.Fatalf("session %s outlived its check going critical in a txn", sid)
	}
}

// A session delete in a txn is a destroy inside it (S69); Consul's own
// HTTP answer to the member is a parse error, which tenure does not copy.
func TestTxnSessionDelete(t *testing.T) {
	f := newFixture(t)
	sid := f.session(nil)
	f.acquire("held", sid, "v")
	end := fmt.Sprintf(`{"Session":{"Verb":"delete","Session":{"ID":%q}}}`, sid)
	r := f.do(http.MethodPut, "/v1/txn", []byte(`[{"KV":{"Verb":"check-session","Key":"held","Session":"`+sid+`"}},`+end+`]`))
	want(t, "txn ending its session", r, http.StatusOK, "")
	if e, _, _ := f.client.Session().Info(sid, nil); e != nil {
		t.Fatalf("session %s outlived its delete", sid)
	}
	if p, _, _ := f.client.KV().Get("held", nil); p == nil || p.Session != "" {
		t.Fatalf("held after its session's delete: %+v", p)
	}
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[`+end+`]`))
	want(t, "delete of a gone session", r, http.StatusConflict,
		fmt.Sprintf(`{"Results":null,"Errors":[{"OpIndex":0,"What":"failed to delete session: session \"%s\" doesn't exist"}]}`, sid))
	r = f.do(http.MethodPut, "/v1/txn", []byte(`[{"Session":{"Verb":"renew","Session":{"ID":"x"}}}]`))
	want(t, "unknown session verb", r, http.StatusConflict, `{"Results":null,"Errors":[{"OpIndex":0,"What":"unknown session operation: renew"}]}`)
}

// Catalog ops are held to a catalog register's limits: over one, the txn
// answers 413 naming it and runs nothing (S39).
func TestTxnCatalogOpLimits(t *testing.T) {
	f := newFixture(t)
	before := f.b.Store().Hash()
	long := strings.Repeat("n", 1025)
	for name, body := range map[string]string{
		"node name":  `[{"Node":{"Verb":"set","Node":{"Node":"` + long + `"}}}]`,
		"service ID": `[{"Service":{"Verb":"set","Node":"n1","Service":{"ID":"` + long + `","Service":"s"}}}]`,
		"check ID":   `[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"` + long + `"}}}]`,
		"session ID": `[{"Session":{"Verb":"delete","Session":{"ID":"` + long + `"}}}]`,
		"definition": `[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"c","Definition":{"HTTP":"` + strings.Repeat("h", 5000) + `","Interval":"1s"}}}}]`,
	} {
		r := f.do(http.MethodPut, "/v1/txn", []byte(body))
		if r.code != http.StatusRequestEntityTooLarge || !strings.Contains(r.text(), "too long") {
			t.Errorf("%s over its limit: got %d %q, want 413 naming the limit", name, r.code, r.text())
		}
	}
	if f.b.Store().Hash() != before {
		t.Fatal("a refused txn changed the state")
	}
}

// A catalog register keeps a check's definition and, when the check has no
// type, names the kind the definition describes, as Consul's does.
func TestRegisterKeepsCheckDefinition(t *testing.T) {
	f := newFixture(t)
	_, err := f.client.Catalog().Register(&api.CatalogRegistration{Node: "n1", Address: "1.1.1.1",
		Checks: api.HealthChecks{{CheckID: "tcp", Status: "passing", Definition: api.HealthCheckDefinition{TCP: "1.1.1.1:1",
			IntervalDuration: 5e9, DeregisterCriticalServiceAfterDuration: 20e9}},
			{CheckID: "plain", Status: "passing"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checks, _, err := f.client.Health().Node("n1", nil)
	if err != nil || len(checks) != 2 {
		t.Fatalf("health node: %v %v", checks, err)
	}
	byID := map[string]*api.HealthCheck{}
	for _, c := range checks {
		byID[c.CheckID] = c
	}
	tcp := byID["tcp"]
	if tcp.Type != "tcp" || tcp.Definition.TCP != "1.1.1.1:1" || tcp.Definition.IntervalDuration != 5e9 || tcp.Definition.DeregisterCriticalServiceAfterDuration != 20e9 {
		t.Fatalf("tcp check read back as %+v", tcp)
	}
	raw := f.do(http.MethodGet, "/v1/health/node/n1", nil)
	var shapes []struct {
		CheckID    string
		Definition json.RawMessage
	}
	if err := json.Unmarshal(raw.body, &shapes); err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		if s.CheckID == "plain" && string(s.Definition) != "{}" {
			t.Fatalf("check without a definition shows %s, want {}", s.Definition)
		}
	}
	if byID["plain"].Type != "" {
		t.Fatalf("check without a definition got type %q", byID["plain"].Type)
	}
}
