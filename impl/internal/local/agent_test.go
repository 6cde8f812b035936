package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/consul/api"
	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/model"
)

const node = "n1"

func zero(time.Duration) time.Duration { return 0 }

// harness is an agent syncing to a MemCatalog, running in the background
// until stop is called.
type harness struct {
	a    *Agent
	cat  *MemCatalog
	stop func()
}

func start(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	cfg := Config{Node: node, Stagger: zero, Sync: SyncConfig{Stagger: zero}}
	if mod != nil {
		mod(&cfg)
	}
	cat := NewMemCatalog()
	a := NewAgent(cfg, cat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	h := &harness{a: a, cat: cat, stop: func() {
		cancel()
		<-done
		a.Close()
	}}
	t.Cleanup(h.stop)
	synctest.Wait() // the first full sync
	return h
}

// settle lets every timer due by now fire and everything runnable run.
func settle() {
	time.Sleep(0)
	synctest.Wait()
}

func ttlService(t *testing.T, h *harness, id string, ttl string, extra string) {
	t.Helper()
	body := fmt.Sprintf(`{"ID":%q,"Name":"web","Tags":["a"],"Port":80,"Check":{"TTL":%q%s}}`, id, ttl, extra)
	def, err := DecodeService([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.a.RegisterService(def, checks.Remote, false, ""); err != nil {
		t.Fatal(err)
	}
	settle()
}

func codeOf(err error) (int, string) {
	var e *checks.Error
	if errors.As(err, &e) {
		return e.Code, e.Reason
	}
	return 0, fmt.Sprint(err)
}

// TestStatusChangeIsOneWrite: a registration is one write (service and its
// check together), and each status change one more, promptly.
func TestStatusChangeIsOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		ttlService(t, h, "web1", "30s", "")
		if w := h.cat.Writes(); w != 1 {
			t.Fatalf("registration took %d writes, want 1", w)
		}
		want := "check service:web1 svc=web1 critical \"\"\nservice web1 web tags=[a] :80"
		if got := h.cat.Dump(node); got != want {
			t.Fatalf("catalog:\n%s\nwant:\n%s", got, want)
		}
		if err := h.a.UpdateTTL("service:web1", checks.Passing, "up"); err != nil {
			t.Fatal(err)
		}
		settle()
		if w := h.cat.Writes(); w != 2 {
			t.Fatalf("a status change took %d writes in all, want 2", w)
		}
		if got := h.cat.Dump(node); !strings.Contains(got, `service:web1 svc=web1 passing "up"`) {
			t.Fatalf("catalog after pass:\n%s", got)
		}
		// The TTL runs out on the agent and the catalog hears of it.
		time.Sleep(30 * time.Second)
		settle()
		if got := h.cat.Dump(node); !strings.Contains(got,
			`critical "TTL expired (last output before timeout follows): up"`) {
			t.Fatalf("catalog after TTL expiry:\n%s", got)
		}
	})
}

// TestOutputOnlyChangesAreDeferred: with the default 5m interval and no
// random part, a new output with the same status reaches the catalog after
// 2.5 min, in one write, however often it changes meanwhile; with deferral
// off it is written at once.
func TestOutputOnlyChangesAreDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		ttlService(t, h, "web1", "1h", "")
		if err := h.a.UpdateTTL("service:web1", checks.Passing, "v0"); err != nil {
			t.Fatal(err)
		}
		settle()
		base := h.cat.Writes()
		began := time.Now()
		for i := 1; i <= 10; i++ {
			if err := h.a.UpdateTTL("service:web1", checks.Passing, fmt.Sprintf("v%d", i)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second)
		}
		// 100s in: two full syncs have run; neither wrote the new output.
		settle()
		if w := h.cat.Writes(); w != base {
			t.Fatalf("%d writes for output-only changes inside the deferral", w-base)
		}
		if got := h.cat.Dump(node); !strings.Contains(got, `passing "v0"`) {
			t.Fatalf("catalog:\n%s", got)
		}
		time.Sleep(time.Until(began.Add(150*time.Second - time.Nanosecond)))
		settle()
		if w := h.cat.Writes(); w != base {
			t.Fatal("deferred output written before check_update_interval/2")
		}
		time.Sleep(time.Nanosecond)
		settle()
		if w := h.cat.Writes(); w != base+1 {
			t.Fatalf("deferred output: %d writes, want 1", w-base)
		}
		if got := h.cat.Dump(node); !strings.Contains(got, `passing "v10"`) {
			t.Fatalf("catalog after the deferral:\n%s", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		h := start(t, func(c *Config) { c.CheckUpdateInterval = -1 })
		ttlService(t, h, "web1", "1h", "")
		if err := h.a.UpdateTTL("service:web1", checks.Passing, "v0"); err != nil {
			t.Fatal(err)
		}
		settle()
		base := h.cat.Writes()
		if err := h.a.UpdateTTL("service:web1", checks.Passing, "v1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		settle()
		if w := h.cat.Writes(); w != base+1 {
			t.Fatalf("with deferral off an output change took %d writes, want 1", w-base)
		}
	})
}

// TestStatusChangesAreWrittenAtOnce (issue 35): every status change starts
// a partial sync at once, however soon it follows the previous one: with
// no virtual time passing, a fail, a pass and a warn each reach the
// catalog.
func TestStatusChangesAreWrittenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		ttlService(t, h, "web1", "1h", `,"Status":"passing"`)
		began := time.Now()
		for _, status := range []string{checks.Critical, checks.Passing, checks.Warning} {
			if err := h.a.UpdateTTL("service:web1", status, "now "+status); err != nil {
				t.Fatal(err)
			}
			settle()
			want := fmt.Sprintf("check service:web1 svc=web1 %s %q", status, "now "+status)
			if got := h.cat.Dump(node); !strings.Contains(got, want) {
				t.Fatalf("%s, with no time passing: catalog\n%s\nwant %s", status, got, want)
			}
		}
		if !time.Now().Equal(began) {
			t.Fatal("virtual time passed; the test proves nothing")
		}
	})
}

// TestChangesDuringASyncMergeIntoOne: while a partial sync's write is in
// flight, a client flips a TTL check a thousand times; one more sync
// follows it, which writes the last status, and no other, so a flapping
// check costs one write in flight and one waiting however fast it flaps.
func TestChangesDuringASyncMergeIntoOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat := newHook()
		a := NewAgent(Config{Node: node, Stagger: zero, Sync: SyncConfig{Stagger: zero}}, cat)
		defer a.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); a.Run(ctx) }()
		defer func() { cancel(); <-done }()
		def, err := DecodeService([]byte(`{"ID":"web1","Name":"web","Check":{"TTL":"1h"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.RegisterService(def, checks.Remote, false, ""); err != nil {
			t.Fatal(err)
		}
		settle()
		release := make(chan struct{})
		cat.beforeWrite = func(string) error {
			<-release // closed: later writes go straight through
			return nil
		}
		base := cat.attempts
		if err := a.UpdateTTL("service:web1", checks.Passing, ""); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the loop's sync is writing, held at the catalog
		if cat.attempts != base+1 {
			t.Fatalf("%d writes started for the first change, want 1", cat.attempts-base)
		}
		for i := range 1000 {
			status := checks.Critical
			if i%2 == 1 {
				status = checks.Passing
			}
			if err := a.UpdateTTL("service:web1", status, fmt.Sprint("flip ", i)); err != nil {
				t.Fatal(err)
			}
		}
		close(release)
		settle()
		if got := cat.attempts - base; got != 2 {
			t.Errorf("the write in flight and a thousand changes during it took %d writes, want 2", got)
		}
		if got := cat.Dump(node); !strings.Contains(got, `check service:web1 svc=web1 passing "flip 999"`) {
			t.Errorf("catalog did not end on the last status:\n%s", got)
		}
	})
}

// TestFullSyncRepairsDrift: entries changed, lost or added behind the
// agent's back are put right by the next full sync; the leader's "consul"
// service and "serfHealth" check are left alone.
func TestFullSyncRepairsDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		ttlService(t, h, "web1", "1h", "")
		ttlService(t, h, "web2", "1h", "")
		h.a.EnableNodeMaintenance("", "")
		settle()
		want := h.cat.Dump(node)

		h.cat.put(node, &Service{ID: "web1", Service: "web", Tags: []string{"changed"}}, nil)
		h.cat.drop(node, "web2", "")
		h.cat.drop(node, "", NodeMaintenanceCheckID)
		h.cat.put(node, &Service{ID: "rogue", Service: "rogue"}, &Check{CheckID: "rogue-check", ServiceID: "rogue", Status: "passing"})
		h.cat.put(node, nil, &Check{CheckID: "stray", Status: "passing"})
		h.cat.put(node, &Service{ID: "consul", Service: "consul"}, &Check{CheckID: "serfHealth", Status: "passing"})
		leader := "check serfHealth svc= passing \"\"\n"
		leaderSvc := "\nservice consul consul tags=[] :0"
		base := h.cat.Writes()

		time.Sleep(time.Minute) // the next full sync has run by then
		settle()
		got := h.cat.Dump(node)
		wantNow := strings.Replace(want, "check service:web1", leader+"check service:web1", 1)
		wantNow = strings.Replace(wantNow, "\nservice web1", leaderSvc+"\nservice web1", 1)
		if got != wantNow {
			t.Fatalf("after the full sync:\n%s\nwant:\n%s", got, wantNow)
		}
		// web1 rewritten, web2 re-registered with its check, maintenance
		// re-added, rogue deregistered with its check, stray deleted.
		if w := h.cat.Writes() - base; w != 5 {
			t.Fatalf("repair took %d writes, want 5", w)
		}
		time.Sleep(time.Minute)
		settle()
		if w := h.cat.Writes() - base; w != 5 {
			t.Fatalf("a full sync of a catalog in sync wrote %d times", w-5)
		}
	})
}

// TestDeregisterCriticalServiceAfter: a 30s setting is raised to 1 min; the
// reaper (every 30 s) removes the service once its check has been critical
// for that long, from the agent and the catalog. A healthy service stays.
func TestDeregisterCriticalServiceAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		ttlService(t, h, "doomed", "10s", `,"DeregisterCriticalServiceAfter":"30s"`)
		ttlService(t, h, "fine", "10m", `,"DeregisterCriticalServiceAfter":"30s","Status":"passing"`)
		time.Sleep(30 * time.Second)
		settle()
		if _, ok := h.a.State().Service("doomed"); !ok {
			t.Fatal("reaped after 30s; the minimum is 1 min")
		}
		time.Sleep(30 * time.Second)
		settle()
		if _, ok := h.a.State().Service("doomed"); ok {
			t.Fatal("still registered after 1 min critical")
		}
		if _, ok := h.a.State().Check("service:doomed"); ok {
			t.Fatal("the reaped service's check is still local")
		}
		if got := h.cat.Dump(node); strings.Contains(got, "doomed") || !strings.Contains(got, "service fine") {
			t.Fatalf("catalog after the reap:\n%s", got)
		}
	})
}

func TestCriticalForRestartsOnRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newState(node, 0, zero)
		st.addService(Service{ID: "s", Service: "s"}, regToken{})
		st.addCheck(Check{CheckID: "c", ServiceID: "s", Status: checks.Critical}, time.Minute, regToken{})
		time.Sleep(50 * time.Second)
		st.updateCheck("c", checks.Passing, "")
		st.updateCheck("c", checks.Critical, "")
		time.Sleep(50 * time.Second)
		if got := st.criticalServices(time.Now()); len(got) != 0 {
			t.Fatalf("critical time survived a passing result: %v", got)
		}
		time.Sleep(10 * time.Second)
		if got := st.criticalServices(time.Now()); !cmp.Equal(got, []string{"s"}) {
			t.Fatalf("critical for 1 min: %v", got)
		}
	})
}

func TestMaintenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		ttlService(t, h, "web1", "1h", `,"Status":"passing"`)
		h.a.EnableNodeMaintenance("", "")
		if err := h.a.EnableServiceMaintenance("web1", "upgrading", ""); err != nil {
			t.Fatal(err)
		}
		settle()
		checksNow := h.a.State().Checks()
		want := []Check{
			{Node: node, CheckID: "_node_maintenance", Name: "Node Maintenance Mode", Status: "critical",
				Notes: "Maintenance mode is enabled for this node, but no reason was provided. This is a default message.",
				Type:  "maintenance", ServiceTags: []string{}},
			{Node: node, CheckID: "_service_maintenance:web1", Name: "Service Maintenance Mode", Status: "critical",
				Notes: "upgrading", Type: "maintenance", ServiceID: "web1", ServiceName: "web", ServiceTags: []string{"a"}},
			{Node: node, CheckID: "service:web1", Name: "Service 'web' check", Status: "passing",
				ServiceID: "web1", ServiceName: "web", ServiceTags: []string{"a"}, Type: "ttl"},
		}
		if diff := cmp.Diff(want, checksNow); diff != "" {
			t.Fatalf("checks (-want +got):\n%s", diff)
		}
		if got := h.cat.Dump(node); !strings.Contains(got, "check _node_maintenance svc= critical") ||
			!strings.Contains(got, "check _service_maintenance:web1 svc=web1 critical") {
			t.Fatalf("catalog:\n%s", got)
		}
		base := h.cat.Writes()
		h.a.EnableNodeMaintenance("again", "")
		if err := h.a.EnableServiceMaintenance("web1", "again", ""); err != nil {
			t.Fatal(err)
		}
		settle()
		if h.cat.Writes() != base {
			t.Fatal("enabling maintenance twice wrote")
		}
		if c, _ := h.a.State().Check(NodeMaintenanceCheckID); c.Notes == "again" {
			t.Fatal("enabling twice replaced the reason")
		}
		h.a.DisableNodeMaintenance()
		if err := h.a.DisableServiceMaintenance("web1"); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := h.cat.Dump(node); strings.Contains(got, "maintenance") {
			t.Fatalf("maintenance checks left in the catalog:\n%s", got)
		}
		for _, tc := range []struct {
			err    error
			code   int
			reason string
		}{
			{h.a.EnableServiceMaintenance("ghost", "", ""), 404, `Unknown service ID "ghost". Ensure that the service ID is passed, not the service name.`},
			{h.a.DisableServiceMaintenance("ghost"), 404, `Unknown service ID "ghost". Ensure that the service ID is passed, not the service name.`},
			{h.a.EnableServiceMaintenance("", "", ""), 400, "Missing service ID"},
		} {
			if c, r := codeOf(tc.err); c != tc.code || r != tc.reason {
				t.Errorf("got %d %q, want %d %q", c, r, tc.code, tc.reason)
			}
		}
	})
}

// TestRefusalsChangeNothing: every refusal has Consul's code and reason and
// leaves the agent and the catalog as they were.
func TestRefusalsChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, func(c *Config) { c.maxServices = 2; c.maxChecks = 3 })
		ttlService(t, h, "web1", "1h", "")
		svcs, chks, writes := h.a.State().Services(), h.a.State().Checks(), h.cat.Writes()

		svc := func(body string) func() error {
			return func() error {
				def, err := DecodeService([]byte(body))
				if err != nil {
					return err
				}
				return h.a.RegisterService(def, checks.Remote, false, "")
			}
		}
		chk := func(body string) func() error {
			return func() error {
				def, err := checks.Decode([]byte(body))
				if err != nil {
					return err
				}
				return h.a.RegisterCheck(def, checks.Remote, "")
			}
		}
		cases := []struct {
			name   string
			call   func() error
			code   int
			reason string
		}{
			{"service without name", svc(`{"ID":"x"}`), 400, "Missing service name"},
			{"service on 0.0.0.0", svc(`{"Name":"x","Address":"0.0.0.0"}`), 400, "Invalid service address"},
			{"service on ::", svc(`{"Name":"x","Address":"::"}`), 400, "Invalid service address"},
			{"connect", svc(`{"Name":"x","Connect":{"Native":true}}`), 400, "Invalid service: Connect not supported by tenure"},
			{"bad weights", svc(`{"Name":"x","Weights":{"Passing":0,"Warning":1}}`), 400, "Invalid Weights: Passing must be greater than 0"},
			{"proxy without destination", svc(`{"Name":"x","Kind":"connect-proxy","Port":1}`), 400,
				"Validation failed: Proxy.DestinationServiceName must be non-empty for Connect proxy services"},
			{"port and ports", svc(`{"Name":"x","Port":1,"Ports":[{"Name":"a","Port":2,"Default":true}]}`), 400,
				"Validation failed: Cannot set both Port and Ports"},
			{"no default port", svc(`{"Name":"x","Ports":[{"Name":"a","Port":2}]}`), 400,
				"Validation failed: One of the Ports must be marked as Default"},
			{"zone without region", svc(`{"Name":"x","Locality":{"Zone":"z"}}`), 400,
				"Validation failed: zone cannot be set without region"},
			{"lan_ipv4 not ipv4", svc(`{"Name":"x","TaggedAddresses":{"lan_ipv4":{"Address":"::1","Port":1}}}`), 500,
				`Service tagged address "lan_ipv4" must be a valid ipv4 address`},
			{"bad service check status", svc(`{"Name":"x","Check":{"TTL":"1s","Status":"up"}}`), 400, "Status for checks must 'passing', 'warning', 'critical'"},
			{"bad service check", svc(`{"Name":"x","Checks":[{"TTL":"1s"},{"HTTP":"http://x"}]}`), 400,
				"Invalid check: Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks"},
			{"remote script in a service", svc(`{"Name":"x","Check":{"Args":["true"],"Interval":"1s"}}`), 500,
				"Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true"},
			{"too many checks", svc(`{"Name":"x","Checks":[{"TTL":"1s"},{"TTL":"1s"},{"TTL":"1s"}]}`), 500, "Too many checks on this agent (limit 3)"},
			{"check on unknown service", chk(`{"Name":"c","TTL":"1s","ServiceID":"ghost"}`), 404, `ServiceID "ghost" does not exist`},
			{"check without name", chk(`{"TTL":"1s"}`), 400, "Missing check name"},
			{"check of no type", chk(`{"Name":"c"}`), 400, "Invalid check: TTL must be > 0 for TTL checks"},
			{"unsupported check", chk(`{"Name":"c","GRPC":"x:1","Interval":"1s"}`), 400, "Invalid check: grpc checks are not supported by tenure"},
			{"deregister unknown check", func() error { return h.a.DeregisterCheck("ghost") }, 404,
				`Unknown check ID "ghost". Ensure that the check ID is passed, not the check name.`},
			{"deregister unknown service", func() error { return h.a.DeregisterService("ghost") }, 404,
				`Unknown service ID "ghost". Ensure that the service ID is passed, not the service name.`},
			{"update unknown check", func() error { return h.a.UpdateTTL("ghost", checks.Passing, "") }, 404,
				`Unknown check ID "ghost". Ensure that the check ID is passed, not the check name.`},
			{"update with bad status", func() error { return h.a.UpdateTTL("service:web1", "fine", "") }, 400,
				"Invalid check status: 'fine'"},
		}
		for _, c := range cases {
			code, reason := codeOf(c.call())
			if code != c.code || reason != c.reason {
				t.Errorf("%s: got %d %q, want %d %q", c.name, code, reason, c.code, c.reason)
			}
		}
		settle()
		if diff := cmp.Diff(svcs, h.a.State().Services()); diff != "" {
			t.Errorf("refusals changed services:\n%s", diff)
		}
		if diff := cmp.Diff(chks, h.a.State().Checks()); diff != "" {
			t.Errorf("refusals changed checks:\n%s", diff)
		}
		if h.cat.Writes() != writes {
			t.Errorf("refusals wrote to the catalog")
		}

		if err := svc(`{"Name":"second"}`)(); err != nil {
			t.Fatal(err)
		}
		if code, reason := codeOf(svc(`{"Name":"third"}`)()); code != 500 || reason != "Too many services on this agent (limit 2)" {
			t.Errorf("third service: %d %q", code, reason)
		}
		if err := svc(`{"Name":"second","Port":2}`)(); err != nil {
			t.Errorf("re-registering at the limit: %v", err)
		}
	})
}

// TestUpdateOnNonTTLCheck: a known check that is not TTL answers 500.
func TestUpdateOnNonTTLCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		h.a.EnableNodeMaintenance("", "")
		if code, reason := codeOf(h.a.UpdateTTL(NodeMaintenanceCheckID, checks.Passing, "")); code != 500 ||
			reason != `CheckID "_node_maintenance" does not have associated TTL` {
			t.Fatalf("got %d %q", code, reason)
		}
	})
}

// TestServiceRegistrationShapes decodes what consul/api sends and checks
// Consul's defaults for IDs, names, weights and re-registration.
func TestServiceRegistrationShapes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		reg := api.AgentServiceRegistration{Name: "vault", Tags: []string{"active"}, Port: 8200, Address: "10.0.0.1",
			Meta: map[string]string{"v": "1"},
			Checks: api.AgentServiceChecks{
				{TTL: "15s", Status: "passing"},
				{Name: "own", CheckID: "mine", TTL: "15s"},
			}}
		body, err := json.Marshal(reg)
		if err != nil {
			t.Fatal(err)
		}
		def, err := DecodeService(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.a.RegisterService(def, checks.Remote, false, ""); err != nil {
			t.Fatal(err)
		}
		got, _ := h.a.State().Service("vault")
		wantSvc := Service{ID: "vault", Service: "vault", Tags: []string{"active"}, Address: "10.0.0.1", Port: 8200,
			Meta: map[string]string{"v": "1"}, Weights: Weights{Passing: 1, Warning: 1},
			// The agent adds the lan and wan ipv4 addresses of an IPv4 service address.
			TaggedAddresses: map[string]model.ServiceAddress{"lan_ipv4": {Address: "10.0.0.1", Port: 8200},
				"wan_ipv4": {Address: "10.0.0.1", Port: 8200}}}
		if diff := cmp.Diff(wantSvc, got); diff != "" {
			t.Fatalf("service (-want +got):\n%s", diff)
		}
		var ids []string
		for _, c := range h.a.State().Checks() {
			ids = append(ids, c.CheckID+"|"+c.Name+"|"+c.Status)
		}
		wantIDs := []string{"mine|own|critical", "service:vault:1|Service 'vault' check|passing"}
		if !cmp.Equal(ids, wantIDs) {
			t.Fatalf("checks %v, want %v", ids, wantIDs)
		}

		// Re-registration keeps the status; replace-existing-checks drops
		// the checks the new definition lacks.
		if err := h.a.UpdateTTL("mine", checks.Warning, "slow"); err != nil {
			t.Fatal(err)
		}
		def2, err := DecodeService([]byte(`{"Name":"vault","Check":{"CheckID":"mine","TTL":"15s","Status":"passing"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.a.RegisterService(def2, checks.Remote, true, ""); err != nil {
			t.Fatal(err)
		}
		cs := h.a.State().Checks()
		if len(cs) != 1 || cs[0].CheckID != "mine" || cs[0].Status != checks.Warning || cs[0].Output != "slow" {
			t.Fatalf("after re-registration with replace: %+v", cs)
		}
		if len(h.a.runner.Running()) != 1 {
			t.Fatalf("runners left: %v", h.a.runner.Running())
		}

		// Deregistering the service is one write and takes its checks.
		settle()
		base := h.cat.Writes()
		if err := h.a.DeregisterService("vault"); err != nil {
			t.Fatal(err)
		}
		settle()
		if w := h.cat.Writes() - base; w != 1 || h.cat.Dump(node) != "" {
			t.Fatalf("deregistration: %d writes, catalog %q", w, h.cat.Dump(node))
		}
		if len(h.a.runner.Running()) != 0 {
			t.Fatalf("runners left after deregistration: %v", h.a.runner.Running())
		}
	})
}

func TestDecodeServiceRefuses(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"Name":"x","Bogus":1}`, `unknown field "Bogus"`},
		{`{"Name":"x","Check":{"Bogus":1}}`, `unknown field "Bogus"`},
		{`{"Name":"x","Checks":[{"ID":"x"}]}`, `unknown field "ID"`},
		{`{"Name":"x","Port":"80"}`, `cannot unmarshal`},
		// A Checks that is not a list is refused even when a good field follows.
		{`{"Checks":5,"Name":"x"}`, `field "Checks"`},
		{`[]`, `cannot unmarshal`},
	} {
		if _, err := DecodeService([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	d, err := DecodeService([]byte(`{"name":"x","check":{},"checks":[null,{"TTL":"1s"}],"enable_tag_override":true,"Kind":"","Connect":null}`))
	if err != nil || d.Check != nil || len(d.Checks) != 1 || !d.EnableTagOverride || len(d.unsupported) != 0 {
		t.Fatalf("%+v %v", d, err)
	}
	if d, err := DecodeService([]byte(`{"Name":"x","Check":{"CheckID":"only-an-id"}}`)); err != nil || d.Check == nil {
		t.Fatalf("a check with only an ID was dropped as empty: %+v %v", d, err)
	}
	if _, err := DecodeService([]byte(`{"Name":"x"`)); err == nil {
		t.Fatal("a truncated body decoded")
	}
}

// TestFailedSyncIsRetried: writes refused by an unreachable leader are
// retried after the retry interval, and permission refusals are not
// retried until the next full sync.
func TestFailedSyncIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs []error
		h := start(t, func(c *Config) {
			c.Sync.OnError = func(err error) { errs = append(errs, err) }
			// The random part at its middle: retry after 15s + 7.5s.
			c.Sync.Stagger = func(d time.Duration) time.Duration { return d / 2 }
		})
		ttlService(t, h, "web1", "1h", "")
		h.cat.fail(errors.New("no leader"))
		if err := h.a.UpdateTTL("service:web1", checks.Passing, ""); err != nil {
			t.Fatal(err)
		}
		settle()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "sync register service web1: no leader") {
			t.Fatalf("errors reported: %v", errs)
		}
		h.cat.fail(nil)
		time.Sleep(22500*time.Millisecond - time.Nanosecond)
		settle()
		if strings.Contains(h.cat.Dump(node), "passing") {
			t.Fatal("retried before the retry interval")
		}
		time.Sleep(time.Nanosecond)
		settle()
		if !strings.Contains(h.cat.Dump(node), "passing") {
			t.Fatalf("not retried:\n%s", h.cat.Dump(node))
		}
	})
}

// TestReapReturnsWhatItRemoved calls the reaper by hand (its ticker set
// out of the way).
func TestReapReturnsWhatItRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, func(c *Config) { c.reapInterval = time.Hour })
		ttlService(t, h, "doomed", "10s", `,"DeregisterCriticalServiceAfter":"1m"`)
		time.Sleep(time.Minute)
		if got := h.a.reap(); !cmp.Equal(got, []string{"doomed"}) {
			t.Fatalf("reaped %v", got)
		}
		if got := h.a.reap(); len(got) != 0 {
			t.Fatalf("reaped again: %v", got)
		}
	})
}

// TestCheckLimitIsExact: the limit counts registered checks once each,
// re-registration included, and is reachable exactly.
func TestCheckLimitIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, func(c *Config) { c.maxChecks = 3 })
		reg := func(body string) error {
			def, err := DecodeService([]byte(body))
			if err != nil {
				return err
			}
			return h.a.RegisterService(def, checks.Remote, false, "")
		}
		if err := reg(`{"Name":"a","Checks":[{"TTL":"1m"},{"TTL":"1m"}]}`); err != nil {
			t.Fatal(err)
		}
		if err := reg(`{"Name":"a","Checks":[{"TTL":"1m"},{"TTL":"1m"}]}`); err != nil {
			t.Fatalf("re-registering the same checks: %v", err)
		}
		if err := h.a.RegisterCheck(checks.Definition{Name: "third", TTL: time.Minute}, checks.Remote, ""); err != nil {
			t.Fatalf("the third check: %v", err)
		}
		if code, _ := codeOf(h.a.RegisterCheck(checks.Definition{Name: "fourth", TTL: time.Minute}, checks.Remote, "")); code != 500 {
			t.Fatalf("the fourth check: %d", code)
		}
		if err := h.a.RegisterCheck(checks.Definition{Name: "third", TTL: time.Hour}, checks.Remote, ""); err != nil {
			t.Fatalf("re-registering a check at the limit: %v", err)
		}
		if err := h.a.DeregisterCheck("third"); err != nil {
			t.Fatal(err)
		}
		if err := reg(`{"Name":"b","Check":{"TTL":"1m"}}`); err != nil {
			t.Fatalf("a service check reaching the limit exactly: %v", err)
		}
	})
}

type denyingCatalog struct {
	*MemCatalog
	denied int
}

func (d *denyingCatalog) Register(string, *Service, []Check, string) error {
	d.denied++
	return fmt.Errorf("register: %w", ErrPermissionDenied)
}

func TestPermissionDeniedWaitsForFullSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat := &denyingCatalog{MemCatalog: NewMemCatalog()}
		st := newState(node, 0, zero)
		var told []string
		s := newSyncer(st, cat, SyncConfig{Stagger: zero, OnDenied: func(what string, err error) {
			told = append(told, what+": "+err.Error())
		}})
		st.addService(Service{ID: "a", Service: "a"}, regToken{})
		if err := s.SyncChanges(); err != nil {
			t.Fatalf("a denial is not an error to retry: %v", err)
		}
		// The agent's log hears of it, as Consul's says "blocked by ACLs".
		if len(told) != 1 || told[0] != "register service a: register: Permission denied" {
			t.Fatalf("OnDenied heard %q", told)
		}
		if err := s.SyncChanges(); err != nil || cat.denied != 1 {
			t.Fatalf("denied write retried by a partial sync (%d tries)", cat.denied)
		}
		if err := s.syncFull(); err != nil || cat.denied != 2 {
			t.Fatalf("full sync did not retry the denied write (%d tries)", cat.denied)
		}
	})
}

func TestServerUpTriggersFullSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, func(c *Config) {
			c.Sync.Stagger = func(d time.Duration) time.Duration { return d / 2 }
		})
		reads := h.cat.readCount()
		time.Sleep(10 * time.Second)
		h.a.NoteServerUp()
		time.Sleep(1500*time.Millisecond - time.Nanosecond)
		settle()
		if h.cat.readCount() != reads {
			t.Fatal("full sync ran before its stagger")
		}
		time.Sleep(time.Nanosecond)
		settle()
		if h.cat.readCount() != reads+2 {
			t.Fatalf("noteServerUp: %d reads, want one full sync (2)", h.cat.readCount()-reads)
		}
	})
}

func TestScaleFactor(t *testing.T) {
	for n, want := range map[int]int{1: 1, 128: 1, 129: 2, 256: 2, 257: 3, 512: 3, 1024: 4, 8192: 7} {
		if got := scaleFactor(n); got != want {
			t.Errorf("scaleFactor(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestFullSyncIntervalScales(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Stagger takes all of its range, so the period is 1m + f × 1m.
		h := start(t, func(c *Config) {
			c.Sync.ClusterSize = func() int { return 256 }
			c.Sync.Stagger = func(d time.Duration) time.Duration { return d - time.Nanosecond }
		})
		reads := h.cat.readCount()
		time.Sleep(3*time.Minute - 2*time.Nanosecond)
		settle()
		if h.cat.readCount() != reads {
			t.Fatal("full sync came before 1m + 2 × 1m on 256 members")
		}
		time.Sleep(time.Nanosecond)
		settle()
		if h.cat.readCount() != reads+2 {
			t.Fatalf("%d reads at 3m", h.cat.readCount()-reads)
		}
	})
}

// TestRealTCPCheckReachesCatalog runs a TCP check against a 127.0.0.1
// listener outside any bubble and waits (without timing anything) for the
// catalog to show it passing, then critical once the listener is closed.
func TestRealTCPCheckReachesCatalog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cat := NewMemCatalog()
	a := NewAgent(Config{Node: node, Stagger: zero, Sync: SyncConfig{Stagger: zero}}, cat)
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { cancel(); <-done }()

	def := checks.Definition{Name: "port", TCP: ln.Addr().String(), Interval: time.Second}
	if err := a.RegisterCheck(def, checks.Remote, ""); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string) {
		t.Helper()
		for range 1000 {
			if strings.Contains(cat.Dump(node), what) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("catalog never showed %q:\n%s", what, cat.Dump(node))
	}
	waitFor("check port svc= passing \"TCP connect " + ln.Addr().String() + ": Success\"")
	_ = ln.Close()
	waitFor("check port svc= critical")
}

// TestServiceRegistrationWaitsForTheSyncUnderWay: a service registration
// holds anti-entropy off while it changes the service and then its checks,
// as Consul's agent pauses its syncer, so no sync can write the service
// without its checks; a registration made while a sync is writing waits
// for that sync, and the one after it writes service and checks together.
func TestServiceRegistrationWaitsForTheSyncUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat := newHook()
		a := NewAgent(Config{Node: node, Stagger: zero, Sync: SyncConfig{Stagger: zero}}, cat)
		defer a.Close()
		a.state.addService(Service{ID: "other", Service: "other"}, regToken{})
		release := make(chan struct{})
		releaseOnce := sync.OnceFunc(func() { close(release) })
		defer releaseOnce() // a failed check leaves no goroutine parked
		cat.beforeWrite = func(string) error {
			<-release // a sync's catalog write in flight
			return nil
		}
		synced := make(chan error, 1)
		go func() { synced <- a.syncer.SyncChanges() }()
		synctest.Wait()

		def, err := DecodeService([]byte(`{"ID":"web","Name":"web","Port":80,"Checks":[{"CheckID":"c1","TTL":"1h"},{"CheckID":"c2","TTL":"1h"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		registered := make(chan error, 1)
		go func() { registered <- a.RegisterService(def, checks.Remote, false, "") }()
		synctest.Wait()
		select {
		case err := <-registered:
			t.Fatalf("registration returned (%v) while a sync was writing", err)
		default:
		}
		releaseOnce()
		if err := <-synced; err != nil {
			t.Fatal(err)
		}
		if err := <-registered; err != nil {
			t.Fatal(err)
		}
		cat.beforeWrite = nil
		writes := cat.attempts
		if err := a.syncer.SyncChanges(); err != nil {
			t.Fatal(err)
		}
		if got := cat.attempts - writes; got != 1 {
			t.Errorf("service web and its two checks took %d writes, want 1", got)
		}
		if got := cat.Dump(node); !strings.Contains(got, "check c1 svc=web") || !strings.Contains(got, "check c2 svc=web") {
			t.Errorf("catalog after the registration:\n%s", got)
		}
	})
}
