package httpapi_test

import (
	"encoding/json"
	"errors"
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
	calls []string
	res   gossip.KeyringResult
	err   error
}

func (m *keyringMembers) Keyring(op gossip.KeyOp, key string, relay uint8) (gossip.KeyringResult, error) {
	m.calls = append(m.calls, strings.Join([]string{[]string{"list", "install", "use", "remove"}[op], key, string('0' + relay)}, " "))
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
	if want := []string{"list  2", "install k2 0", "use k2 0", "remove k2 0"}; strings.Join(m.calls, ",") != strings.Join(want, ",") {
		t.Fatalf("calls %q, want %q", m.calls, want)
	}
	m.err, m.res = errors.New("2/2 nodes reported failure"), gossip.KeyringResult{Messages: map[string]string{"b": "no keyring", "a": "no keyring"}}
	code, body = keyringCall(t, h, "POST", "/v1/operator/keyring", `{"Key":"k3"}`)
	if want := "3 errors occurred: * dc7 (LAN) error: 2/2 nodes reported failure * a: no keyring * b: no keyring"; code != 500 || body != want {
		t.Fatalf("failure: %d %q, want 500 %q", code, body, want)
	}
}
