package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/local"
)

// localFixture is a local agent on an in-memory catalog behind
// WithLocalAgent; requests the local routes do not take reach next, which
// answers 418 so that a leak shows.
type localFixture struct {
	t   *testing.T
	la  *local.Agent
	cat *local.MemCatalog
	srv *httptest.Server
}

func newLocalFixture(t *testing.T) *localFixture {
	t.Helper()
	cat := local.NewMemCatalog()
	la := local.NewAgent(local.Config{Node: "node-a", Stagger: func(time.Duration) time.Duration { return 0 }}, cat)
	t.Cleanup(la.Close)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(httpapi.WithLocalAgent(la, next, httpapi.LocalOptions{}))
	t.Cleanup(srv.Close)
	return &localFixture{t: t, la: la, cat: cat, srv: srv}
}

func (f *localFixture) do(method, path, body string) (int, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(out))
}

func (f *localFixture) ok(method, path, body string) string {
	f.t.Helper()
	code, out := f.do(method, path, body)
	if code != http.StatusOK {
		f.t.Fatalf("%s %s: %d %s", method, path, code, out)
	}
	return out
}

// snapshot is everything a refused call must leave alone: the agent's
// services and checks and the catalog's copy.
func (f *localFixture) snapshot() string {
	return f.ok("GET", "/v1/agent/services", "") + "\n" + f.ok("GET", "/v1/agent/checks", "") + "\n" + f.cat.Dump("node-a")
}

// TestCheckUpdatesAreInTheCatalogWhenTheyAnswer (issue 35): pass, warn,
// fail and update answer only once their status change is in the catalog,
// as Consul's agent syncs before it replies, so a session bound to the
// check can be created at once. An output-only change waits for
// check_update_interval: the sync before the reply writes nothing. No
// anti-entropy loop runs here: only the endpoints sync.
func TestCheckUpdatesAreInTheCatalogWhenTheyAnswer(t *testing.T) {
	f := newLocalFixture(t)
	f.ok("PUT", "/v1/agent/check/register", `{"Name":"app","TTL":"1h"}`)
	for _, step := range []struct{ path, body, want string }{
		{"/v1/agent/check/pass/app?note=up", "", `check app svc= passing "up"`},
		{"/v1/agent/check/warn/app?note=slow", "", `check app svc= warning "slow"`},
		{"/v1/agent/check/fail/app", "", `check app svc= critical ""`},
		{"/v1/agent/check/update/app", `{"Status":"passing","Output":"back"}`, `check app svc= passing "back"`},
	} {
		f.ok("PUT", step.path, step.body)
		if got := f.cat.Dump("node-a"); got != step.want {
			t.Fatalf("after %s: catalog %q, want %q", step.path, got, step.want)
		}
	}
	writes := f.cat.Writes()
	f.ok("PUT", "/v1/agent/check/pass/app?note=still+up", "")
	if c, _ := f.la.State().Check("app"); c.Output != "still up" {
		t.Fatalf("the agent's own output is %q, want the new one", c.Output)
	}
	if w, got := f.cat.Writes()-writes, f.cat.Dump("node-a"); w != 0 || got != `check app svc= passing "back"` {
		t.Fatalf("an output-only change went to the catalog at once: %d writes, catalog %q", w, got)
	}
}

// TestLocalAgentEndpoints: each agent check, service and maintenance
// endpoint with good input does what Consul's does (S61); the agent
// answers them itself.
func TestLocalAgentEndpoints(t *testing.T) {
	f := newLocalFixture(t)
	f.ok("PUT", "/v1/agent/service/register", `{"Name":"web","Port":80,"Tags":["a"],"Check":{"TTL":"10s"}}`)
	if w := f.cat.Writes(); w != 1 {
		t.Fatalf("service with its check: %d catalog writes before the reply, want 1", w)
	}
	var svcs map[string]map[string]any
	if err := json.Unmarshal([]byte(f.ok("GET", "/v1/agent/services", "")), &svcs); err != nil {
		t.Fatal(err)
	}
	web := svcs["web"]
	if web["Service"] != "web" || web["Port"] != float64(80) || web["Datacenter"] != "dc1" ||
		web["Weights"].(map[string]any)["Passing"] != float64(1) {
		t.Fatalf("services: %v", svcs)
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(f.ok("GET", "/v1/agent/service/web", "")), &one); err != nil || one["ID"] != "web" {
		t.Fatalf("service/web: %v %v", one, err)
	}
	var cs map[string]map[string]any
	if err := json.Unmarshal([]byte(f.ok("GET", "/v1/agent/checks", "")), &cs); err != nil {
		t.Fatal(err)
	}
	sc := cs["service:web"]
	if sc["Status"] != "critical" || sc["Name"] != "Service 'web' check" || sc["Type"] != "ttl" ||
		sc["ServiceName"] != "web" || sc["Node"] != "node-a" {
		t.Fatalf("checks: %v", cs)
	}

	f.ok("PUT", "/v1/agent/check/pass/service:web?note=fine", "")
	f.ok("PUT", "/v1/agent/check/update/service:web", `{"Status":"warning","Output":"slow"}`)
	if c, _ := f.la.State().Check("service:web"); c.Status != "warning" || c.Output != "slow" {
		t.Fatalf("after update: %+v", c)
	}
	f.ok("PUT", "/v1/agent/check/fail/service:web", "")
	if c, _ := f.la.State().Check("service:web"); c.Status != "critical" || c.Output != "" {
		t.Fatalf("after fail without a note: %+v", c)
	}

	f.ok("PUT", "/v1/agent/check/register", `{"Name":"disk","TTL":"1m","Status":"passing","ServiceID":"web"}`)
	if c, ok := f.la.State().Check("disk"); !ok || c.ServiceID != "web" || c.Status != "passing" {
		t.Fatalf("registered check: %+v", c)
	}
	// Re-registering the service without the disk check, replacing checks,
	// drops it.
	f.ok("PUT", "/v1/agent/service/register?replace-existing-checks", `{"Name":"web","Check":{"TTL":"10s"}}`)
	if _, ok := f.la.State().Check("disk"); ok {
		t.Fatal("replace-existing-checks kept a check the new definition lacks")
	}

	f.ok("PUT", "/v1/agent/maintenance?enable=true&reason=patching", "")
	f.ok("PUT", "/v1/agent/service/maintenance/web?enable=true", "")
	nm, ok1 := f.la.State().Check(local.NodeMaintenanceCheckID)
	sm, ok2 := f.la.State().Check(local.ServiceMaintenancePrefix + "web")
	if !ok1 || !ok2 || nm.Notes != "patching" || nm.Status != "critical" || sm.ServiceID != "web" {
		t.Fatalf("maintenance checks: %+v %+v", nm, sm)
	}
	if !strings.Contains(f.cat.Dump("node-a"), local.NodeMaintenanceCheckID) {
		t.Fatalf("maintenance not synced before the reply:\n%s", f.cat.Dump("node-a"))
	}
	f.ok("PUT", "/v1/agent/maintenance?enable=false", "")
	f.ok("PUT", "/v1/agent/service/maintenance/web?enable=false", "")
	if _, ok := f.la.State().Check(local.NodeMaintenanceCheckID); ok {
		t.Fatal("node maintenance still on")
	}

	f.ok("PUT", "/v1/agent/check/deregister/service:web", "")
	f.ok("PUT", "/v1/agent/service/deregister/web", "")
	if len(f.la.State().Services()) != 0 || len(f.la.State().Checks()) != 0 || f.cat.Dump("node-a") != "" {
		t.Fatalf("left after deregistration: %v %v\n%s", f.la.State().Services(), f.la.State().Checks(), f.cat.Dump("node-a"))
	}
	if code, _ := f.do("GET", "/v1/kv/x", ""); code != http.StatusTeapot {
		t.Fatalf("a non-agent path did not reach next: %d", code)
	}
}

// TestLocalAgentEndpointsRefuse: bad input gets Consul's status and one-line
// reason, and changes nothing, locally or in the catalog.
func TestLocalAgentEndpointsRefuse(t *testing.T) {
	f := newLocalFixture(t)
	f.ok("PUT", "/v1/agent/service/register", `{"Name":"web","Check":{"HTTP":"http://127.0.0.1:1/","Interval":"1h","Timeout":"1s","Status":"passing"}}`)
	f.ok("PUT", "/v1/agent/check/register", `{"Name":"app","TTL":"1h","Status":"passing"}`)
	// The HTTP check's first run starts at once (no stagger) on its own
	// goroutine and sets its output (and, refused, its status); landing
	// between a case's two snapshots it would look like that case's doing.
	// Once it has reported, nothing runs again within the hour, so every
	// change the snapshots show is the request's.
	eventually(t, "the first run of service:web", func() bool {
		c, ok := f.la.State().Check("service:web")
		return ok && c.Output != ""
	})
	long := strings.Repeat("x", 2000)
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		reason                   string
	}{
		{"check decode", "PUT", "/v1/agent/check/register", `{"Name":"x","Bogus":1}`, 400, `Request decode failed: json: unknown field "Bogus"`},
		{"check no name", "PUT", "/v1/agent/check/register", `{"TTL":"1s"}`, 400, "Missing check name"},
		{"check bad status", "PUT", "/v1/agent/check/register", `{"Name":"x","TTL":"1s","Status":"up"}`, 400, "Bad check status"},
		{"check no type", "PUT", "/v1/agent/check/register", `{"Name":"x"}`, 400, "Invalid check: TTL must be > 0 for TTL checks"},
		{"check interval and ttl", "PUT", "/v1/agent/check/register", `{"Name":"x","TTL":"1s","Interval":"1s"}`, 400, "Invalid check: Interval and TTL cannot both be specified"},
		{"check unknown service", "PUT", "/v1/agent/check/register", `{"Name":"x","TTL":"1s","ServiceID":"zz"}`, 404, `ServiceID "zz" does not exist`},
		{"check script refused", "PUT", "/v1/agent/check/register", `{"Name":"x","Args":["true"],"Interval":"1s"}`, 500, "Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true"},
		{"check unsupported kind", "PUT", "/v1/agent/check/register", `{"Name":"x","GRPC":"127.0.0.1:1","Interval":"1s"}`, 400, "not supported"},
		{"check get", "GET", "/v1/agent/check/register", "", 405, "method GET not allowed"},
		{"deregister unknown check", "PUT", "/v1/agent/check/deregister/zz", "", 404, `Unknown check ID "zz". Ensure that the check ID is passed, not the check name.`},
		{"deregister long id", "PUT", "/v1/agent/check/deregister/" + long, "", 413, "Check ID too long"},
		{"pass unknown", "PUT", "/v1/agent/check/pass/zz", "", 404, `Unknown check ID "zz". Ensure that the check ID is passed, not the check name.`},
		{"pass non-TTL", "PUT", "/v1/agent/check/pass/service:web", "", 500, `CheckID "service:web" does not have associated TTL`},
		{"warn post", "POST", "/v1/agent/check/warn/app", "", 405, "method POST not allowed"},
		{"update bad status", "PUT", "/v1/agent/check/update/app", `{"Status":"bogus"}`, 400, "Invalid check status: 'bogus'"},
		{"update no body", "PUT", "/v1/agent/check/update/app", "", 400, "Request decode failed: EOF"},
		{"update bad json", "PUT", "/v1/agent/check/update/app", `{`, 400, "Request decode failed:"},
		{"update unknown", "PUT", "/v1/agent/check/update/zz", `{"Status":"passing"}`, 404, `Unknown check ID "zz"`},
		{"checks put", "PUT", "/v1/agent/checks", "", 405, "method PUT not allowed"},
		{"service decode", "PUT", "/v1/agent/service/register", `{"Name":"x","Bogus":1}`, 400, `Request decode failed: json: unknown field "Bogus"`},
		{"service no name", "PUT", "/v1/agent/service/register", `{}`, 400, "Missing service name"},
		{"service any address", "PUT", "/v1/agent/service/register", `{"Name":"x","Address":"0.0.0.0"}`, 400, "Invalid service address"},
		{"service bad check status", "PUT", "/v1/agent/service/register", `{"Name":"x","Check":{"TTL":"1s","Status":"up"}}`, 400, "Status for checks must 'passing', 'warning', 'critical'"},
		{"service bad check", "PUT", "/v1/agent/service/register", `{"Name":"x","Checks":[{"TTL":"1s"},{"Interval":"1s"}]}`, 400, "Invalid check: "},
		{"service connect", "PUT", "/v1/agent/service/register", `{"Name":"x","Connect":{"Native":true}}`, 400, "not supported by tenure"},
		{"service proxy too large", "PUT", "/v1/agent/service/register", `{"Name":"x","Kind":"connect-proxy","Port":1,"Proxy":{"DestinationServiceName":"d","Config":{"big":"` + strings.Repeat("x", 64<<10) + `"}}}`, 413, "Service proxy configuration too long"},
		{"service tag too long", "PUT", "/v1/agent/service/register", `{"Name":"x","Tags":["` + long + long + `"]}`, 413, "Service tag too long"},
		{"service proxy invalid", "PUT", "/v1/agent/service/register", `{"Name":"x","Kind":"connect-proxy"}`, 400,
			"Validation failed: Port or SocketPath must be set for a connect-proxy; Proxy.DestinationServiceName must be non-empty for Connect proxy services"},
		{"service health no id", "GET", "/v1/agent/health/service/id/", "", 400, "Missing serviceID"},
		{"service health no name", "GET", "/v1/agent/health/service/name/", "", 400, "Missing service Name"},
		{"service post", "POST", "/v1/agent/service/register", `{"Name":"x"}`, 405, "method POST not allowed"},
		{"deregister unknown service", "PUT", "/v1/agent/service/deregister/zz", "", 404, `Unknown service ID "zz". Ensure that the service ID is passed, not the service name.`},
		{"get unknown service", "GET", "/v1/agent/service/zz", "", 404, "unknown service ID: zz"},
		{"maintenance no enable", "PUT", "/v1/agent/maintenance", "", 400, "Missing value for enable"},
		{"maintenance bad enable", "PUT", "/v1/agent/maintenance?enable=x", "", 400, `Invalid value for enable: "x"`},
		{"maintenance get", "GET", "/v1/agent/maintenance?enable=true", "", 405, "method GET not allowed"},
		{"service maintenance no id", "PUT", "/v1/agent/service/maintenance/?enable=true", "", 400, "Missing service ID"},
		{"service maintenance unknown", "PUT", "/v1/agent/service/maintenance/zz?enable=true", "", 404, `Unknown service ID "zz". Ensure that the service ID is passed, not the service name.`},
		{"service maintenance no enable", "PUT", "/v1/agent/service/maintenance/web", "", 400, "Missing value for enable"},
	} {
		before, writes := f.snapshot(), f.cat.Writes()
		code, out := f.do(tc.method, tc.path, tc.body)
		if code != tc.code || !strings.Contains(out, tc.reason) || strings.Contains(out, "\n") {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, out, tc.code, tc.reason)
		}
		if after := f.snapshot(); after != before || f.cat.Writes() != writes {
			t.Errorf("%s changed something:\n%s\n---\n%s", tc.name, before, after)
		}
	}
	if _, ok := f.la.State().Check("x"); ok {
		t.Fatal("a refused check exists")
	}
}

// FuzzLocalAgentRegister feeds arbitrary bodies to the check and service
// register endpoints and to check update: each answer is 200 or a
// refusal with one line of reason, and a refusal changes nothing.
func FuzzLocalAgentRegister(f *testing.F) {
	for _, seed := range []string{
		`{"Name":"a","TTL":"10s","Status":"passing"}`,
		`{"ID":"h","Name":"h","HTTP":"http://127.0.0.1:1/","Interval":"1h","Header":{"X":["y"]},"Method":"POST","TLSSkipVerify":true}`,
		`{"Name":"t","TCP":"127.0.0.1:1","Interval":"500ms","Timeout":"1s","DeregisterCriticalServiceAfter":"90s"}`,
		`{"Name":"s","args":["/bin/true"],"Interval":"1s"}`,
		`{"Name":"web","Port":80,"Tags":["a"],"Meta":{"k":"v"},"Weights":{"Passing":3,"Warning":1},"Checks":[{"TTL":"1s"},{"HTTP":"http://127.0.0.1:1/","Interval":"1h"}]}`,
		`{"Name":"x","TTL":1000000000}`,
		`{"Status":"passing","Output":"ok"}`,
		`{"name":"lower","ttl":"1s"}`,
		`{"Name":"x","Connect":{}}`,
		`[]`, `{`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/agent/check/register", "/v1/agent/service/register", "/v1/agent/check/update/a"} {
			// A fresh agent per path: a check an earlier path registered
			// runs on its own and may change its status between the two
			// snapshots of a later, refused call.
			fx := newLocalFixture(t)
			if strings.HasSuffix(path, "/a") {
				fx.ok("PUT", "/v1/agent/check/register", `{"Name":"a","TTL":"1h"}`)
			}
			before := fx.snapshot()
			code, out := fx.do("PUT", path, body)
			if strings.Contains(out, "\n") {
				t.Fatalf("%s: reason of more than one line: %q", path, out)
			}
			if code == http.StatusOK {
				continue
			}
			if code < 400 || code > 500 || out == "" {
				t.Fatalf("%s: answered %d %q", path, code, out)
			}
			if after := fx.snapshot(); after != before {
				t.Fatalf("%s refused with %d %q but changed:\n%s\n---\n%s", path, code, out, before, after)
			}
		}
	})
}

// TestAgentServiceHealth (S61): the health of a local service by ID and by
// name, with Consul's codes, text bodies and 404s; by name, the worst
// instance decides, and the agent's node checks count.
func TestAgentServiceHealth(t *testing.T) {
	f := newLocalFixture(t)
	f.ok("PUT", "/v1/agent/service/register", `{"ID":"a","Name":"web","Check":{"TTL":"1h","Status":"passing"}}`)
	f.ok("PUT", "/v1/agent/service/register", `{"ID":"b","Name":"web","Check":{"TTL":"1h","Status":"passing"}}`)
	expect := func(path string, code int, text string) {
		t.Helper()
		if c, out := f.do("GET", path+"?format=text", ""); c != code || out != text {
			t.Errorf("%s as text: %d %q, want %d %q", path, c, out, code, text)
		}
		c, out := f.do("GET", path, "")
		if c != code {
			t.Errorf("%s: %d %s, want %d", path, c, out, code)
		}
	}
	expect("/v1/agent/health/service/id/a", 200, "passing")
	expect("/v1/agent/health/service/name/web", 200, "passing")
	f.ok("PUT", "/v1/agent/check/warn/service:a", "")
	expect("/v1/agent/health/service/id/a", 429, "warning")
	expect("/v1/agent/health/service/id/b", 200, "passing")
	expect("/v1/agent/health/service/name/web", 429, "warning")
	f.ok("PUT", "/v1/agent/check/fail/service:b", "")
	expect("/v1/agent/health/service/name/web", 503, "critical")
	f.ok("PUT", "/v1/agent/check/pass/service:a", "")
	f.ok("PUT", "/v1/agent/check/pass/service:b", "")
	f.ok("PUT", "/v1/agent/maintenance?enable=true", "") // a node check: every service is in maintenance
	expect("/v1/agent/health/service/id/a", 503, "maintenance")
	f.ok("PUT", "/v1/agent/maintenance?enable=false", "")

	_, out := f.do("GET", "/v1/agent/health/service/id/a", "")
	var info api.AgentServiceChecksInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.AggregatedStatus != "passing" ||
		info.Service == nil || info.Service.ID != "a" || info.Service.Service != "web" || len(info.Checks) != 1 {
		t.Errorf("health of a: %s (%v)", out, err)
	}
	expect("/v1/agent/health/service/id/ghost", 404, "ServiceId ghost not found")
	expect("/v1/agent/health/service/name/ghost", 404, "ServiceName ghost Not Found")
	if _, out := f.do("GET", "/v1/agent/health/service/id/ghost", ""); out != `{"AggregatedStatus":"critical","Service":null,"Checks":null}` {
		t.Errorf("unknown ID as JSON: %s", out)
	}
	if _, out := f.do("GET", "/v1/agent/health/service/name/ghost", ""); out != `[]` {
		t.Errorf("unknown name as JSON: %s", out)
	}
}
