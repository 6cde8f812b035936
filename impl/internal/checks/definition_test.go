package checks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/consul/api"
)

// TestDecodeConsulAPIBody decodes what consul/api sends for a check
// registration, so every field the client fills reaches the definition.
func TestDecodeConsulAPIBody(t *testing.T) {
	reg := api.AgentCheckRegistration{ID: "web-http", Name: "web", Notes: "n", ServiceID: "web1",
		AgentServiceCheck: api.AgentServiceCheck{
			Interval: "5s", Timeout: "2s", HTTP: "http://127.0.0.1:1/h", Method: "POST",
			Header: map[string][]string{"X-A": {"1", "2"}}, Body: "b", TLSSkipVerify: true,
			TLSServerName: "srv", Status: "passing", SuccessBeforePassing: 2,
			FailuresBeforeWarning: 1, FailuresBeforeCritical: 3,
			DeregisterCriticalServiceAfter: "90s",
		}}
	body, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	want := Definition{ID: "web-http", Name: "web", Notes: "n", ServiceID: "web1", Status: "passing",
		Interval: 5 * time.Second, Timeout: 2 * time.Second, HTTP: "http://127.0.0.1:1/h", Method: "POST",
		Header: map[string][]string{"X-A": {"1", "2"}}, Body: "b", TLSSkipVerify: true, TLSServerName: "srv",
		SuccessBeforePassing: 2, FailuresBeforeWarning: 1, FailuresBeforeCritical: 3,
		DeregisterCriticalServiceAfter: 90 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("decode (-want +got):\n%s", diff)
	}

	svc, err := json.Marshal(api.AgentServiceCheck{CheckID: "c1", Name: "n", Args: []string{"/bin/true"}, Interval: "1m"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := DecodeServiceCheck(svc)
	if err != nil {
		t.Fatal(err)
	}
	if sc.ID != "c1" || !cmp.Equal(sc.Args, []string{"/bin/true"}) || sc.Interval != time.Minute {
		t.Fatalf("service check decoded as %+v", sc)
	}
}

func TestDecodeSpellings(t *testing.T) {
	cases := []struct {
		name, body string
		want       Definition
	}{
		{"lower-case keys", `{"name":"a","ttl":"15s","status":"warning"}`,
			Definition{Name: "a", TTL: 15 * time.Second, Status: "warning"}},
		{"nanosecond durations", `{"Name":"a","TTL":1500000000}`,
			Definition{Name: "a", TTL: 1500 * time.Millisecond}},
		{"fractional nanoseconds", `{"Name":"a","TTL":2.0e9}`,
			Definition{Name: "a", TTL: 2 * time.Second}},
		{"null duration", `{"Name":"a","TTL":null}`, Definition{Name: "a"}},
		{"args alias", `{"Name":"a","args":["x"],"Interval":"1s"}`,
			Definition{Name: "a", Args: []string{"x"}, Interval: time.Second}},
		{"script_args alias", `{"Name":"a","script_args":["y"]}`,
			Definition{Name: "a", Args: []string{"y"}}},
		{"ScriptArgs beats args", `{"Name":"a","args":["x"],"ScriptArgs":["z"]}`,
			Definition{Name: "a", Args: []string{"z"}}},
		{"snake aliases", `{"Name":"a","deregister_critical_service_after":"2m","tls_skip_verify":true,` +
			`"tls_server_name":"s","service_id":"w","docker_container_id":"d"}`,
			Definition{Name: "a", DeregisterCriticalServiceAfter: 2 * time.Minute, TLSSkipVerify: true,
				TLSServerName: "s", ServiceID: "w", DockerContainerID: "d"}},
		{"camel beats snake", `{"Name":"a","DeregisterCriticalServiceAfter":"3m","deregister_critical_service_after":"2m"}`,
			Definition{Name: "a", DeregisterCriticalServiceAfter: 3 * time.Minute}},
		{"null body", `null`, Definition{}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown field", `{"Name":"a","Bogus":1}`, `unknown field "Bogus"`},
		{"CheckID in an agent body", `{"Name":"a","CheckID":"x"}`, `unknown field "CheckID"`},
		{"bad duration", `{"Name":"a","TTL":"ten"}`, `invalid duration`},
		{"duration of wrong type", `{"Name":"a","TTL":true}`, `as a duration`},
		{"string for int", `{"Name":"a","SuccessBeforePassing":"2"}`, `cannot unmarshal`},
		{"array body", `[1]`, `cannot unmarshal`},
		{"empty body", ``, `EOF`},
		{"truncated", `{"Name":"a"`, `EOF`},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := DecodeServiceCheck([]byte(`{"Name":"a","ID":"x"}`)); err == nil {
		t.Error(`a service check accepted "ID"; its key is CheckID`)
	}
	if _, err := DecodeServiceCheck([]byte(`{"Name":"a","ServiceID":"x"}`)); err == nil {
		t.Error(`a service check accepted "ServiceID"`)
	}
}

func TestPrepareRefusals(t *testing.T) {
	script := Definition{Name: "s", Args: []string{"true"}, Interval: time.Second}
	cases := []struct {
		name   string
		d      Definition
		src    Source
		p      Policy
		code   int
		reason string
	}{
		{"no name", Definition{TTL: time.Second}, Remote, Policy{}, 400, "Missing check name"},
		{"bad status", Definition{Name: "a", TTL: time.Second, Status: "ok"}, Remote, Policy{}, 400, "Bad check status"},
		{"maintenance is not a client status", Definition{Name: "a", TTL: time.Second, Status: "maintenance"}, Remote, Policy{}, 400, "Bad check status"},
		{"bare check", Definition{Name: "a"}, Remote, Policy{}, 400, "Invalid check: TTL must be > 0 for TTL checks"},
		{"negative TTL", Definition{Name: "a", TTL: -time.Second}, Remote, Policy{}, 400, "Invalid check: TTL must be > 0 for TTL checks"},
		{"TTL and interval", Definition{Name: "a", TTL: time.Second, Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: Interval and TTL cannot both be specified"},
		{"HTTP without interval", Definition{Name: "a", HTTP: "http://x"}, Remote, Policy{}, 400, "Invalid check: Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks"},
		{"TCP negative interval", Definition{Name: "a", TCP: "x:1", Interval: -time.Second}, Remote, Policy{}, 400, "Invalid check: Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks"},
		{"alias with interval", Definition{Name: "a", AliasService: "w", TCP: "x:1", Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: Interval cannot be set for Alias checks"},
		{"alias with TTL", Definition{Name: "a", AliasService: "w", TTL: time.Second}, Remote, Policy{}, 400, "Invalid check: TTL must be not be set for Alias checks"},
		{"negative output cap", Definition{Name: "a", TTL: time.Second, OutputMaxSize: -1}, Remote, Policy{}, 400, "Invalid check: MaxOutputMaxSize must be positive"},
		{"warning above critical", Definition{Name: "a", TTL: time.Second, FailuresBeforeWarning: 3, FailuresBeforeCritical: 2}, Remote, Policy{}, 400, "Invalid check: FailuresBeforeWarning can't be higher than FailuresBeforeCritical"},
		{"alias unsupported", Definition{Name: "a", AliasService: "w"}, Remote, Policy{}, 400, "Invalid check: alias checks are not supported by tenure"},
		{"grpc unsupported", Definition{Name: "a", GRPC: "x:1", Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: grpc checks are not supported by tenure"},
		{"udp unsupported", Definition{Name: "a", UDP: "x:1", Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: udp checks are not supported by tenure"},
		{"h2ping unsupported", Definition{Name: "a", H2PING: "x:1", Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: h2ping checks are not supported by tenure"},
		{"remote docker, only local scripts enabled", Definition{Name: "a", DockerContainerID: "c", Args: []string{"x"}, Interval: time.Second}, Remote, Policy{EnableLocalScriptChecks: true}, 500,
			"Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true"},
		{"local docker, no scripts enabled", Definition{Name: "a", DockerContainerID: "c", Args: []string{"x"}, Interval: time.Second}, local, Policy{}, 500,
			"Scripts are disabled on this agent; to enable, configure 'enable_script_checks' or 'enable_local_script_checks' to true"},
		{"OSService beside a Docker ID without args", Definition{Name: "a", OSService: "x", DockerContainerID: "c", Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: os_service checks are not supported by tenure"},
		{"os_service unsupported", Definition{Name: "a", OSService: "x", Interval: time.Second}, Remote, Policy{}, 400, "Invalid check: os_service checks are not supported by tenure"},
		{"remote script, only local enabled", script, Remote, Policy{EnableLocalScriptChecks: true}, 500,
			"Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true"},
		{"local script, none enabled", script, local, Policy{}, 500,
			"Scripts are disabled on this agent; to enable, configure 'enable_script_checks' or 'enable_local_script_checks' to true"},
	}
	for _, c := range cases {
		before := c.d
		_, err := Prepare(c.d, c.src, c.p)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || e.Reason != c.reason {
			t.Errorf("%s: got %v, want %d %q", c.name, err, c.code, c.reason)
		}
		if !cmp.Equal(before, c.d) {
			t.Errorf("%s: Prepare changed its input", c.name)
		}
	}
}

func TestPrepareAcceptsAndNormalizes(t *testing.T) {
	script := Definition{Name: "s", Args: []string{"true"}, Interval: time.Second}
	for _, c := range []struct {
		name string
		src  Source
		p    Policy
	}{
		{"remote with enable_script_checks", Remote, Policy{EnableScriptChecks: true}},
		{"local with enable_local_script_checks", local, Policy{EnableLocalScriptChecks: true}},
		{"local with enable_script_checks", local, Policy{EnableScriptChecks: true}},
	} {
		if _, err := Prepare(script, c.src, c.p); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	in := Definition{Name: "web", HTTP: "http://x", TCP: "x:1", Interval: 10 * time.Millisecond,
		DeregisterCriticalServiceAfter: time.Second, FailuresBeforeCritical: 4, OutputMaxSize: 1 << 20,
		Header: map[string][]string{"A": {"1"}}}
	got, err := Prepare(in, Remote, Policy{outputMaxSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "web" || got.Status != Critical || got.Interval != minInterval ||
		got.DeregisterCriticalServiceAfter != minDeregisterAfter || got.OutputMaxSize != 100 ||
		got.FailuresBeforeWarning != 4 {
		t.Fatalf("normalized to %+v", got)
	}
	if got.Kind() != kindHTTP {
		t.Fatalf("HTTP and TCP both set: kind %q, want http (first match wins)", got.Kind())
	}
	got.Header["A"][0] = "changed"
	if in.Header["A"][0] != "1" {
		t.Fatal("the prepared definition shares its header with the input")
	}

	low, _ := Prepare(Definition{Name: "t", TTL: time.Second, OutputMaxSize: 10, Status: Passing, ID: "x"}, Remote, Policy{})
	if low.OutputMaxSize != 10 || low.Status != Passing || low.ID != "x" || low.Kind() != kindTTL {
		t.Fatalf("a check's own lower cap, status or ID was not kept: %+v", low)
	}
	dflt, _ := Prepare(Definition{Name: "t", TTL: time.Second}, Remote, Policy{})
	if dflt.OutputMaxSize != defaultOutputMaxSize {
		t.Fatalf("default output cap %d", dflt.OutputMaxSize)
	}
	if dflt.Interval != 0 || dflt.DeregisterCriticalServiceAfter != 0 {
		t.Fatalf("unset Interval or DeregisterCriticalServiceAfter got a value: %+v", dflt)
	}
	long, _ := Prepare(Definition{Name: "t", TCP: "x:1", Interval: 10 * time.Second,
		DeregisterCriticalServiceAfter: 5 * time.Minute}, Remote, Policy{})
	if long.Interval != 10*time.Second || long.DeregisterCriticalServiceAfter != 5*time.Minute {
		t.Fatalf("values above the minimums were changed: %+v", long)
	}
}

func TestEffectiveTimeout(t *testing.T) {
	for _, c := range []struct {
		d    Definition
		want time.Duration
	}{
		{Definition{HTTP: "h", Interval: time.Second}, defaultHTTPTimeout},
		{Definition{TCP: "h", Interval: time.Second}, defaultTCPTimeout},
		{Definition{Args: []string{"x"}, Interval: time.Second}, defaultScriptTimeout},
		{Definition{Args: []string{"x"}, Interval: time.Second, Timeout: time.Second}, time.Second},
	} {
		if got := c.d.effectiveTimeout(); got != c.want {
			t.Errorf("%+v: timeout %v, want %v", c.d, got, c.want)
		}
	}
}

// TestDefaultTimeoutsAreConsuls pins the timeouts a check without Timeout
// gets to Consul's: 10 s for HTTP and TCP, 30 s for a script.
func TestDefaultTimeoutsAreConsuls(t *testing.T) {
	for _, c := range []struct {
		d    Definition
		want time.Duration
	}{
		{Definition{HTTP: "h", Interval: time.Second}, 10 * time.Second},
		{Definition{TCP: "h", Interval: time.Second}, 10 * time.Second},
		{Definition{Args: []string{"x"}, Interval: time.Second}, 30 * time.Second},
	} {
		if got := c.d.effectiveTimeout(); got != c.want {
			t.Errorf("%+v: timeout %v, want Consul's %v", c.d, got, c.want)
		}
	}
}
