package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// limitFixture is a handler over a double holding a key, a session and a
// registered node, so a rejected request has something to disturb.
func limitFixture(t *testing.T) (http.Handler, func() (uint64, int)) {
	t.Helper()
	h, store := fuzzServer(t)
	for _, cmd := range []model.Command{
		{KV: &model.KVOp{Verb: model.KVSet, Key: "a", Value: []byte("v")}},
		{CreateSession: &model.CreateSession{ID: "s1", Node: "node-a"}},
	} {
		if res, err := store.Apply(cmd); err != nil || res.Err != nil {
			t.Fatalf("setup %+v: %v / %v", cmd, err, res.Err)
		}
	}
	return h, func() (uint64, int) { return store.Hash(), store.Applies() }
}

func jsonBody(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func txnOps(n int, key string) []map[string]any {
	ops := make([]map[string]any, n)
	for i := range ops {
		ops[i] = map[string]any{"KV": map[string]any{"Verb": "get", "Key": key}}
	}
	return ops
}

func checkList(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	return ids
}

// Every request limit answers a clear 4xx with a one-line reason naming
// the limit, and leaves the state (index included) and the log untouched.
func TestRequestLimitsRejectAndChangeNothing(t *testing.T) {
	long := func(n int) string { return strings.Repeat("k", n) }
	cases := []struct {
		name, method, path, body string
		code                     int
		reason                   string
	}{
		{"key put", put, "/v1/kv/" + long(maxKeyLen+1), "v", 413, "Key name too long (8193 > 8192 bytes)"},
		{"key delete", del, "/v1/kv/" + long(maxKeyLen+1), "", 413, "Key name too long"},
		{"key delete-tree", del, "/v1/kv/" + long(maxKeyLen+1) + "?recurse", "", 413, "Key name too long"},
		{"key get", get, "/v1/kv/" + long(maxKeyLen+1), "", 413, "Key name too long"},
		{"1 MiB key put", put, "/v1/kv/" + long(1<<20), "", 413, "Key name too long (1048576 > 8192 bytes)"},
		{"acquire session", put, "/v1/kv/a?acquire=" + long(maxNameLen+1), "", 413, "Session ID too long"},
		{"release session", put, "/v1/kv/a?release=" + long(maxNameLen+1), "", 413, "Session ID too long"},
		{"value", put, "/v1/kv/a", long(model.MaxValueSize + 1), 413, "Request body(524289 bytes) too large"},
		{"bad index", get, "/v1/kv/a?index=" + long(100), "", 400, "Invalid index"},
		{"index overflow", put, "/v1/kv/a?index=18446744073709551616", "v", 400, "Invalid index"},
		{"bad wait", put, "/v1/kv/a?wait=forever", "v", 400, "Invalid wait time"},
		{"wait overflow", get, "/v1/kv/a?index=1&wait=99999999999h", "", 400, "Invalid wait time"},
		{"bad max_stale", put, "/v1/kv/a?max_stale=x", "v", 400, "Invalid max_stale value"},
		{"bad flags", put, "/v1/kv/a?flags=-1", "v", 400, "Invalid flags"},
		{"txn body", put, "/v1/txn", long(maxTxnBody + 1), 413, "Request body(524289 bytes) too large"},
		{"txn ops", put, "/v1/txn", jsonBody(t, txnOps(model.MaxTxnOps+1, "a")), 413, "Transaction contains too many operations (129 > 128)"},
		{"txn key", put, "/v1/txn", jsonBody(t, []map[string]any{{"KV": map[string]any{"Verb": "set", "Key": long(maxKeyLen + 1)}}}), 413, "Key name of op 0 too long (8193 > 8192 bytes)"},
		{"txn key with big value", put, "/v1/txn", jsonBody(t, []map[string]any{{"KV": map[string]any{"Verb": "set", "Key": long(maxKeyLen + 1), "Value": make([]byte, model.MaxValueSize/2+1)}}}), 413, "Key name of op 0 too long"},
		{"txn session", put, "/v1/txn", jsonBody(t, []map[string]any{{"KV": map[string]any{"Verb": "lock", "Key": "a", "Session": long(maxNameLen + 1)}}}), 413, "Session ID of op 0 too long (1025 > 1024 bytes)"},
		{"session body", put, "/v1/session/create", long(maxJSONBody + 1), 413, "Request body(262145 bytes) too large, max size: 262144 bytes."},
		{"session name", put, "/v1/session/create", jsonBody(t, map[string]any{"Name": long(maxNameLen + 1)}), 413, "Session Name too long (1025 > 1024 bytes)"},
		{"session node", put, "/v1/session/create", jsonBody(t, map[string]any{"Node": long(maxNameLen + 1)}), 413, "Session Node too long"},
		{"session ttl text", put, "/v1/session/create", jsonBody(t, map[string]any{"TTL": strings.Repeat("0", maxTTLLen) + "15s"}), 413, "Session TTL too long (67 > 64 bytes)"},
		{"session ttl below", put, "/v1/session/create", `{"TTL":"9s"}`, 400, "Invalid Session TTL '9000000000', must be between [10s=24h0m0s]"},
		{"session ttl above", put, "/v1/session/create", `{"TTL":"24h0m1s"}`, 400, "Invalid Session TTL"},
		{"session behavior", put, "/v1/session/create", jsonBody(t, map[string]any{"Behavior": long(100)}), 413, "Session Behavior too long"},
		{"session check count", put, "/v1/session/create", jsonBody(t, map[string]any{"NodeChecks": checkList(maxChecks + 1)}), 413, "Too many session checks (65 > 64)"},
		{"session check id", put, "/v1/session/create", jsonBody(t, map[string]any{"NodeChecks": []string{long(maxNameLen + 1)}}), 413, "Check ID too long"},
		{"destroy id", put, "/v1/session/destroy/" + long(maxNameLen+1), "", 413, "Session ID too long"},
		{"renew id", put, "/v1/session/renew/" + long(maxNameLen+1), "", 413, "Session ID too long"},
		{"register body", put, "/v1/catalog/register", long(maxRegisterBody + 1), 413, "Request body(1048577 bytes) too large, max size: 1048576 bytes."},
		{"register service tag", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "Tags": []string{long(maxNameLen + 1)}}}), 413, "Service tag too long"},
		{"register service meta", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "Meta": map[string]string{"k": long(maxNameLen + 1)}}}), 413, "Service meta value too long"},
		{"register service tagged addresses", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "TaggedAddresses": func() map[string]any {
			m := map[string]any{}
			for i := range maxServiceAddresses + 1 {
				m[fmt.Sprint("t", i)] = map[string]any{"Address": "a", "Port": 1}
			}
			return m
		}()}}), 413, "Too many Service tagged addresses (17 > 16)"},
		{"register service ports", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "Ports": func() []map[string]any {
			var l []map[string]any
			for i := range maxServiceAddresses + 1 {
				l = append(l, map[string]any{"Name": fmt.Sprint("p", i), "Port": i + 1})
			}
			return l
		}()}}), 413, "Too many Service ports (17 > 16)"},
		{"register service socket path", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "SocketPath": long(maxNameLen + 1)}}), 413, "Service socket path too long"},
		{"register service locality", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "Locality": map[string]any{"Region": long(maxNameLen + 1)}}}), 413, "Service locality region too long"},
		{"register service proxy", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Service": map[string]any{"Service": "s", "Kind": "connect-proxy", "Port": 1, "Proxy": map[string]any{"DestinationServiceName": "d", "Config": map[string]any{"big": long(maxProxyJSON)}}}}), 413, "Service proxy configuration too long"},
		{"register node meta pairs", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "NodeMeta": metaPairs(maxNodeMeta + 1)}), 413, "Too many Node meta pairs (67 > 66)"},
		{"register check notes", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Check": map[string]any{"CheckID": "c", "Notes": long(maxOutputLen + 1)}}), 413, "Check notes too long"},
		{"query body", post, "/v1/query", long(maxQueryBody + 1), 413, "Request body(262145 bytes) too large"},
		{"query name", post, "/v1/query", jsonBody(t, map[string]any{"Name": long(maxNameLen + 1)}), 413, "Query name too long"},
		{"query tags", post, "/v1/query", jsonBody(t, map[string]any{"Name": "q", "Service": map[string]any{"Service": "s", "Tags": checkList(maxTags + 1)}}), 413, "Too many Query tags (65 > 64)"},
		{"query id", get, "/v1/query/" + long(maxNameLen+1), "", 413, "Query ID too long"},
		{"register node", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": long(maxNameLen + 1), "Address": "x"}), 413, "Node name too long"},
		{"register address", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": long(maxNameLen + 1)}), 413, "Node address too long"},
		{"register check id", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Check": map[string]any{"CheckID": long(maxNameLen + 1)}}), 413, "Check ID too long"},
		{"register check name", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Checks": []any{map[string]any{"Name": long(maxNameLen + 1)}}}), 413, "Check name too long"},
		{"register check count", put, "/v1/catalog/register", jsonBody(t, map[string]any{"Node": "n", "Address": "x", "Checks": func() []any {
			out := make([]any, maxChecks+1)
			for i := range out {
				out[i] = map[string]any{"CheckID": fmt.Sprint(i), "Status": "passing"}
			}
			return out
		}()}), 413, "Too many checks (65 > 64)"},
		{"deregister node", put, "/v1/catalog/deregister", jsonBody(t, map[string]any{"Node": long(maxNameLen + 1)}), 413, "Node name too long"},
		{"deregister check", put, "/v1/catalog/deregister", jsonBody(t, map[string]any{"Node": "node-a", "CheckID": long(maxNameLen + 1)}), 413, "Check ID too long"},
		{"agent check id", put, "/v1/agent/check/fail/" + long(maxNameLen+1), "", 413, "Check ID too long"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, state := limitFixture(t)
			hash, applies := state()
			rec := serve(h, tc.method, tc.path, []byte(tc.body))
			got := rec.Body.String()
			if rec.Code != tc.code || !strings.HasPrefix(got, tc.reason) {
				t.Fatalf("answered %d %.200q, want %d starting %q", rec.Code, got, tc.code, tc.reason)
			}
			if strings.Contains(got, "\n") || len(got) > 512 {
				t.Fatalf("reason is not one short line: %.200q (%d bytes)", got, len(got))
			}
			if h2, a2 := state(); h2 != hash || a2 != applies {
				t.Fatalf("rejected request changed the state (hash %x→%x) or reached the log (%d→%d applies)", hash, h2, applies, a2)
			}
		})
	}
}

// The limits themselves are fine: a request exactly at every limit is
// served (so the limits are where the documentation says).
func TestRequestLimitsAcceptTheLimit(t *testing.T) {
	long := func(n int) string { return strings.Repeat("k", n) }
	h, _ := limitFixture(t)
	reg := map[string]any{"Node": long(maxNameLen), "Address": long(maxNameLen), "Checks": func() []any {
		out := make([]any, maxChecks)
		for i := range out {
			out[i] = map[string]any{"CheckID": fmt.Sprintf("%0*d", maxNameLen, i), "Name": long(maxNameLen), "Status": "passing"}
		}
		return out
	}()}
	ids := make([]string, maxChecks)
	for i := range ids {
		ids[i] = fmt.Sprintf("%0*d", maxNameLen, i)
	}
	for _, tc := range []struct{ method, path, body string }{
		{put, "/v1/kv/" + long(maxKeyLen), "v"},
		{put, "/v1/kv/" + long(maxKeyLen) + "?acquire=s1", ""},
		{put, "/v1/txn", jsonBody(t, txnOps(model.MaxTxnOps, "a"))},
		{put, "/v1/txn", jsonBody(t, txnOps(1, long(maxKeyLen)))},
		{put, "/v1/catalog/register", jsonBody(t, reg)},
		{put, "/v1/session/create", jsonBody(t, map[string]any{"Name": long(maxNameLen), "Node": long(maxNameLen),
			"TTL": strings.Repeat("0", maxTTLLen-3) + "15s", "NodeChecks": ids})},
	} {
		if rec := serve(h, tc.method, tc.path, []byte(tc.body)); rec.Code != http.StatusOK {
			t.Fatalf("%s %.80s at the limit: %d %.200q", tc.method, tc.path, rec.Code, rec.Body)
		}
	}
}

// metaPairs is a meta map of n pairs.
func metaPairs(n int) map[string]string {
	out := make(map[string]string, n)
	for i := range n {
		out[fmt.Sprint("k", i)] = "v"
	}
	return out
}
