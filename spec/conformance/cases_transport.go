package conformance

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// Transport security: S70 HTTPS, S71 the server port's TLS, S72 gossip
// encryption, S73 the gossip keyring endpoint.

func transportCases() []Case {
	return []Case{
		{clause: "S70", name: "https-verifies-callers-with-the-ca",
			unobservable: "needs the agent's certificates and a client of its CA; tested in impl/agent and cmd/tenure"},
		{clause: "S71", name: "server-port-refuses-peers-without-a-ca-certificate",
			unobservable: "the server port speaks raft and RPC, not HTTP; tested in impl/internal/rpc and impl/agent"},
		{clause: "S72", name: "agent-with-another-gossip-key-cannot-join", slow: true, agents: true, run: s72OtherKeyCannotJoin},
		{clause: "S73", name: "keyring-refusals-answer-consul-codes", run: s73KeyringRefusals},
		{clause: "S73", name: "keyring-list-in-consul-api-shape", run: s73KeyringList},
	}
}

// s72OtherKeyCannotJoin: an agent whose only gossip key is one the pool
// cannot have (a fresh random one) is refused when it joins: whether the
// pool encrypts with another key or not at all, the agent's verified
// incoming and outgoing encryption keeps it out (CONSUL.md §20).
func s72OtherKeyCannotJoin(t *caseT) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	join, _ := t.poolAddr()
	a := t.StartLoneAgent("other-key", "-encrypt", base64.StdEncoding.EncodeToString(key))
	err := a.join(join)
	t.Check(err != nil, "an agent with another gossip key joined the pool")
	r := t.Do(http.MethodGet, "/v1/agent/members", nil)
	t.Require(r.Code == 200, "agent members: want 200, got %s", r)
	var members []struct{ Name string }
	t.decode("agent members", r, &members)
	for _, m := range members {
		t.Check(m.Name != a.Node, "the pool lists %s, which has another gossip key", a.Node)
	}
}

// s73KeyringRefusals: a keyring request the agent cannot read is refused
// with Consul's status and words, before any member is asked.
func s73KeyringRefusals(t *caseT) {
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{http.MethodPost, "/v1/operator/keyring", "", 400, "Request decode failed: EOF"},
		{http.MethodPost, "/v1/operator/keyring", `{"Bogus":1}`, 400, `Request decode failed: json: unknown field "Bogus"`},
		{http.MethodGet, "/v1/operator/keyring?relay-factor=x", "", 400, `Error parsing relay factor: strconv.Atoi: parsing "x": invalid syntax`},
		{http.MethodGet, "/v1/operator/keyring?relay-factor=9", "", 400, "Invalid relay-factor: Relay factor must be in range: [0, 5]"},
		{http.MethodGet, "/v1/operator/keyring?local-only=maybe", "", 400, `Error parsing local-only: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{http.MethodPut, "/v1/operator/keyring?local-only=true", `{"Key":"x"}`, 400, "Invalid use of local-only: local-only can only be set for list requests"},
		{http.MethodPatch, "/v1/operator/keyring", "", 405, ""},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := t.Do(tc.method, tc.path, body)
		if t.Equal(tc.method+" "+tc.path+" "+tc.body+" status", r.Code, tc.code) {
			t.Check(strings.Contains(string(r.Body), tc.want), "%s %s %s: body %s, want %q", tc.method, tc.path, tc.body, r, tc.want)
		}
	}
	r := t.Do(http.MethodPatch, "/v1/operator/keyring", nil)
	t.Equal("Allow of a PATCH", r.Header.Get("Allow"), "OPTIONS,GET,POST,PUT,DELETE")
}

// s73KeyringList: a list answers consul/api's KeyringResponse array, one
// LAN entry naming the datacenter and counting the pool's members, or,
// when the pool is not encrypted, 500 saying so.
func s73KeyringList(t *caseT) {
	r := t.Do(http.MethodGet, "/v1/operator/keyring", nil)
	if r.Code == 500 {
		t.Check(strings.Contains(string(r.Body), "Keyring is empty (encryption not enabled)"),
			"an unencrypted pool's list: %s, want it to say encryption is not enabled", r)
		return
	}
	t.Require(r.Code == 200, "keyring list: want 200 or 500, got %s", r)
	var list []struct {
		WAN         bool
		Datacenter  string
		Keys        map[string]int
		PrimaryKeys map[string]int
		NumNodes    int
	}
	t.Require(json.Unmarshal(r.Body, &list) == nil, "keyring list is not consul/api's shape: %s", r)
	lan := 0
	for _, k := range list {
		if k.WAN {
			continue
		}
		lan++
		t.Check(k.Datacenter != "" && k.NumNodes > 0 && len(k.Keys) > 0 && len(k.PrimaryKeys) == 1,
			"LAN keyring entry %+v: want a datacenter, members, keys and one primary key", k)
	}
	t.Equal("LAN entries in the keyring list", lan, 1)
}
