package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
)

// keyringMembers is a pool whose keyring records each operation and
// answers with res and err.
type keyringMembers struct {
	staticMembers
	calls []poolCall
	res   gossip.KeyringResult
	err   error
}

// poolCall is one operation a pool was asked for.
type poolCall struct {
	op    gossip.KeyOp
	key   string
	relay uint8
}

func (c poolCall) String() string {
	return fmt.Sprintf("%s %s %d", []string{"list", "install", "use", "remove"}[c.op], c.key, c.relay)
}

func (m *keyringMembers) Keyring(op gossip.KeyOp, key string, relay uint8) (gossip.KeyringResult, error) {
	m.calls = append(m.calls, poolCall{op, key, relay})
	return m.res, m.err
}

func keyringCall(t *testing.T, h http.Handler, method, target, body string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	return w.Code, w.Body.String()
}

// TestKeyringEndpointRefusals: each bad request answers Consul's status
// and words and reaches no member.
func TestKeyringEndpointRefusals(t *testing.T) {
	m := &keyringMembers{}
	h := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: m, Forward: &recordingForwarder{}})
	for _, tc := range []struct {
		method, target, body string
		status               int
		want                 string
	}{
		{"POST", "/v1/operator/keyring", "", 400, "Request decode failed: EOF"},
		{"POST", "/v1/operator/keyring", `{"Bogus":1}`, 400, `Request decode failed: json: unknown field "Bogus"`},
		{"PUT", "/v1/operator/keyring", `{"Key":`, 400, "Request decode failed:"},
		{"GET", "/v1/operator/keyring?relay-factor=x", "", 400, `Error parsing relay factor: strconv.Atoi: parsing "x": invalid syntax`},
		{"GET", "/v1/operator/keyring?relay-factor=6", "", 400, "Invalid relay-factor: Relay factor must be in range: [0, 5]"},
		{"GET", "/v1/operator/keyring?local-only=maybe", "", 400, `Error parsing local-only: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{"PUT", "/v1/operator/keyring?local-only=true", `{"Key":"k"}`, 400, "Invalid use of local-only: local-only can only be set for list requests"},
		{"PATCH", "/v1/operator/keyring", "", 405, "method PATCH not allowed"},
	} {
		code, body := keyringCall(t, h, tc.method, tc.target, tc.body)
		if code != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s %s: %d %q, want %d %q", tc.method, tc.target, tc.body, code, body, tc.status, tc.want)
		}
	}
	if len(m.calls) != 0 {
		t.Fatalf("refused requests reached the pool: %v", m.calls)
	}
	if code, _ := keyringCall(t, httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: &staticMembers{},
		Forward: &recordingForwarder{}}), "GET", "/v1/operator/keyring", ""); code != http.StatusNotImplemented {
		t.Fatalf("a pool without a keyring: %d", code)
	}
}

// TestKeyringEndpointAnswers: the operations reach the pool with their key
// and relay factor; a list reads back through consul/api's type; a failure
// is a 500 naming the pool and each member's message.
func TestKeyringEndpointAnswers(t *testing.T) {
	m := &keyringMembers{res: gossip.KeyringResult{Keys: map[string]int{"k1": 2}, PrimaryKeys: map[string]int{"k1": 2}, NumNodes: 2}}
	h := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: m, Forward: &recordingForwarder{}, Datacenter: "dc7"})
	code, body := keyringCall(t, h, "GET", "/v1/operator/keyring?relay-factor=2&local-only=true", "")
	var got []api.KeyringResponse
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("list: %d %q %v", code, body, err)
	}
	if len(got) != 1 || got[0].WAN || got[0].Datacenter != "dc7" || got[0].Keys["k1"] != 2 || got[0].PrimaryKeys["k1"] != 2 || got[0].NumNodes != 2 {
		t.Fatalf("list %+v", got)
	}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		if code, body := keyringCall(t, h, method, "/v1/operator/keyring", `{"Key":"k2"}`); code != 200 || body != "" {
			t.Fatalf("%s: %d %q", method, code, body)
		}
	}
	if got, want := fmt.Sprint(m.calls), "[list  2 install k2 0 use k2 0 remove k2 0]"; got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	m.err, m.res = errors.New("2/2 nodes reported failure"), gossip.KeyringResult{Messages: map[string]string{"b": "no keyring", "a": "no keyring"}}
	code, body = keyringCall(t, h, "POST", "/v1/operator/keyring", `{"Key":"k3"}`)
	if want := "3 errors occurred: * dc7 (LAN) error: 2/2 nodes reported failure * a: no keyring * b: no keyring"; code != 500 || body != want {
		t.Fatalf("failure: %d %q, want 500 %q", code, body, want)
	}
}

// FuzzKeyringEndpoint: whatever the body and query, the endpoint answers
// without panicking; a refusal (4xx) reaches no member, and an operation
// that reaches the pool carries the body's key exactly as decoded.
func FuzzKeyringEndpoint(f *testing.F) {
	for _, s := range []struct {
		method uint8
		query  string
		body   string
	}{{0, "", ""}, {1, "", `{"Key":"k"}`}, {2, "relay-factor=3", `{"Key":"a\u0000b"}`}, {3, "local-only=1", `{"Key":1}`},
		{1, "relay-factor=-1", `{"Key":"k","Bogus":true}`}, {0, "local-only=false&relay-factor=5", ""}} {
		f.Add(s.method, s.query, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method uint8, query string, body []byte) {
		m := &keyringMembers{}
		h := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: m, Forward: &recordingForwarder{}})
		verb := []string{"GET", "POST", "PUT", "DELETE"}[method%4]
		req := httptest.NewRequest(verb, "/v1/operator/keyring", strings.NewReader(string(body)))
		req.URL.RawQuery = query
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch {
		case w.Code >= 400 && w.Code < 500 && len(m.calls) != 0:
			t.Fatalf("refused with %d yet reached the pool: %v", w.Code, m.calls)
		case w.Code == 200 && len(m.calls) != 1:
			t.Fatalf("answered 200 after %d pool calls", len(m.calls))
		case w.Code != 200 && w.Code/100 != 4:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if w.Code == 200 && verb != "GET" {
			var in struct{ Key string }
			if err := json.Unmarshal(body, &in); err != nil {
				t.Fatalf("a body that does not decode reached the pool: %q", body)
			}
			if m.calls[0].key != in.Key {
				t.Fatalf("pool got %q for key %q", m.calls[0].key, in.Key)
			}
		}
	})
}
