package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestACLTxnEnforced: S90 on /v1/txn: each denied op is listed in a 409
// with Consul's text and nothing is applied; a read-only txn drops the
// results the caller may not read and says so in its body; S91's stricter
// decision on catalog ops that name another service.
func TestACLTxnEnforced(t *testing.T) {
	f := catalogACLFixture(t)
	f.policy("kvapp", `key_prefix "app/" { policy = "write" }
key "ro" { policy = "read" }
service "web" { policy = "write" }
session_prefix "" { policy = "write" }`)
	secret, acc := f.token("kvapp")
	for _, k := range []string{"ro", "secret", "app/x"} {
		if _, err := f.b.Store().Apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: k, Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
	}
	denial := func(i int, perm, name string) string {
		return fmt.Sprintf(`{"OpIndex":%d,"What":"Permission denied: token with AccessorID '%s' lacks permission '%s' on \"%s\""}`, i, acc, perm, name)
	}
	for _, tc := range []struct {
		what, body, want string
	}{
		{"one denied set among allowed", `[{"KV":{"Verb":"set","Key":"app/a","Value":"eA=="}},{"KV":{"Verb":"set","Key":"b/x","Value":"eA=="}}]`,
			`{"Results":null,"Errors":[` + denial(1, "key:write", "b/x") + `]}`},
		{"set a read-only key", `[{"KV":{"Verb":"set","Key":"ro","Value":"eA=="}}]`,
			`{"Results":null,"Errors":[` + denial(0, "key:write", "ro") + `]}`},
		{"check-not-exists needs write", `[{"KV":{"Verb":"check-not-exists","Key":"secret"}},{"KV":{"Verb":"delete","Key":"app/x"}}]`,
			`{"Results":null,"Errors":[` + denial(0, "key:write", "secret") + `]}`},
		{"delete-tree over a prefix", `[{"KV":{"Verb":"delete-tree","Key":"ap"}}]`,
			`{"Results":null,"Errors":[` + denial(0, "key:write", "ap") + `]}`},
		{"check-index on a read-only txn", `[{"KV":{"Verb":"check-index","Key":"secret","Index":1}}]`,
			`{"Results":null,"Errors":[` + denial(0, "key:read", "secret") + `],"Index":0,"LastContact":0,"KnownLeader":false,"ConsistencyLevel":"","NotModified":false,"Backend":0,"ResultsFilteredByACLs":false}`},
		{"service delete of db", `[{"Service":{"Verb":"delete","Node":"n1","Service":{"ID":"db1","Service":"db"}}}]`,
			`{"Results":null,"Errors":[` + denial(0, "service:write", "db") + `]}`},
		{"S91: db1 deleted under web's name", `[{"Service":{"Verb":"delete","Node":"n1","Service":{"ID":"db1","Service":"web"}}}]`,
			`{"Results":null,"Errors":[` + denial(0, "service:write", "db") + `]}`},
		{"a node op", `[{"Node":{"Verb":"set","Node":{"Node":"n9","Address":"10.0.0.9"}}}]`,
			`{"Results":null,"Errors":[` + denial(0, "node:write", "n9") + `]}`},
		{"a node check op", `[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"nc","Name":"nc"}}}]`,
			`{"Results":null,"Errors":[` + denial(0, "node:write", "n1") + `]}`},
		{"a db check op", `[{"Check":{"Verb":"set","Check":{"Node":"n1","CheckID":"dc","Name":"dc","ServiceID":"db1"}}}]`,
			`{"Results":null,"Errors":[` + denial(0, "service:write", "db") + `]}`},
	} {
		f.unchanged(tc.what, func() {
			r := f.call("PUT", "/v1/txn", secret, tc.body)
			if r.code != 409 || strings.TrimSpace(r.text()) != tc.want {
				t.Errorf("%s: %d %s\nwant 409 %s", tc.what, r.code, r.text(), tc.want)
			}
		})
	}
	anon := f.call("PUT", "/v1/txn", "", `[{"KV":{"Verb":"set","Key":"app/a","Value":"eA=="}}]`)
	if anon.code != 409 || !strings.Contains(anon.text(), "anonymous token lacks permission 'key:write' on \\\"app/a\\\"") {
		t.Errorf("anonymous write: %d %s", anon.code, anon.text())
	}

	// A read drops what the caller may not read, and says so.
	r := f.call("PUT", "/v1/txn", secret, `[{"KV":{"Verb":"get","Key":"secret"}},{"KV":{"Verb":"get","Key":"ro"}}]`)
	got := decode[struct {
		Results               []struct{ KV struct{ Key string } }
		ResultsFilteredByACLs bool
	}](t, r)
	if r.code != 200 || len(got.Results) != 1 || got.Results[0].KV.Key != "ro" || !got.ResultsFilteredByACLs {
		t.Errorf("filtered read: %d %s", r.code, r.text())
	}
	// Not to the anonymous token.
	f.policy("anonread", `key "ro" { policy = "read" }`)
	r = f.call("PUT", "/v1/txn", "", `[{"KV":{"Verb":"get","Key":"secret"}}]`)
	if r.code != 200 || strings.Contains(r.text(), `"ResultsFilteredByACLs":true`) || !strings.Contains(r.text(), `"Results":[]`) {
		t.Errorf("anonymous filtered read: %d %s", r.code, r.text())
	}
	// A write's results are filtered too: the set is allowed, the get of
	// a key the token cannot read is dropped.
	r = f.call("PUT", "/v1/txn", secret, `[{"KV":{"Verb":"set","Key":"app/a","Value":"eA=="}},{"KV":{"Verb":"get","Key":"secret"}}]`)
	if r.code != 200 || strings.Count(r.text(), `"Key"`) != 1 || !strings.Contains(r.text(), `"Key":"app/a"`) {
		t.Errorf("filtered write results: %d %s", r.code, r.text())
	}
	want(t, "service set of web", f.call("PUT", "/v1/txn", secret,
		`[{"Service":{"Verb":"set","Node":"n1","Service":{"ID":"web1","Service":"web","Port":81}}}]`), 200, "")

	// S91: tenure's session delete needs what a destroy needs.
	r = f.call("PUT", "/v1/session/create", secret, `{"Node":"n1","NodeChecks":[]}`)
	want(t, "session create", r, 200, "")
	sid := decode[map[string]string](t, r)["ID"]
	del := `[{"Session":{"Verb":"delete","Session":{"ID":"` + sid + `"}}}]`
	f.unchanged("anonymous session delete", func() {
		r := f.call("PUT", "/v1/txn", "", del)
		if r.code != 409 || !strings.Contains(r.text(), `anonymous token lacks permission 'session:write' on \"n1\"`) {
			t.Errorf("anonymous session delete: %d %s", r.code, r.text())
		}
	})
	want(t, "session delete with session:write", f.call("PUT", "/v1/txn", secret, del), 200, "")
}
