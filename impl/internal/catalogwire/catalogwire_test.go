package catalogwire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/model"
)

// TestConsulClientsBodiesDecode: a register and a deregister as consul/api
// writes them decode into these shapes field for field, and what tenure
// sends decodes into consul/api's: the names are Consul's.
func TestConsulClientsBodiesDecode(t *testing.T) {
	theirs := api.CatalogRegistration{ID: "2f1d1c5e-0000-4000-8000-000000000001", Node: "n1", Address: "10.0.0.1",
		TaggedAddresses: map[string]string{"lan": "10.0.0.1"}, NodeMeta: map[string]string{"rack": "r1"},
		SkipNodeUpdate: true,
		Service: &api.AgentService{Kind: api.ServiceKindConnectProxy, ID: "web1", Service: "web", Tags: []string{"a"}, Address: "10.0.0.2", Port: 80, Meta: map[string]string{"v": "1"},
			TaggedAddresses: map[string]api.ServiceAddress{"lan": {Address: "10.0.0.3", Port: 81}},
			Ports:           api.ServicePorts{{Name: "http", Port: 8080, Default: true}}, SocketPath: "/s",
			Weights: api.AgentWeights{Passing: 2, Warning: 1}, EnableTagOverride: true,
			Locality: &api.Locality{Region: "r", Zone: "z"},
			Proxy: &api.AgentServiceConnectProxyConfig{DestinationServiceName: "d", LocalServicePort: 9,
				Mode: api.ProxyModeTransparent, Config: map[string]any{"k": "v"},
				Upstreams:        []api.Upstream{{DestinationName: "db", LocalBindPort: 1, MeshGateway: api.MeshGatewayConfig{Mode: "local"}}},
				TransparentProxy: &api.TransparentProxyConfig{OutboundListenerPort: 2, DialedDirectly: true},
				Expose:           api.ExposeConfig{Checks: true, Paths: []api.ExposePath{{ListenerPort: 3, Path: "/p", LocalPathPort: 4, Protocol: "http"}}},
				AccessLogs:       &api.AccessLogsConfig{Enabled: true, Path: "/log"}}},
		Check:  &api.AgentCheck{Node: "n1", CheckID: "c1", Name: "c", Status: "passing", Notes: "n", Output: "o", ServiceID: "web1", Type: "ttl"},
		Checks: api.HealthChecks{{Node: "n1", CheckID: "c2", Name: "c2", Status: "critical"}}}
	want := Register{ID: theirs.ID, Node: "n1", Address: "10.0.0.1", TaggedAddresses: theirs.TaggedAddresses,
		NodeMeta: theirs.NodeMeta, SkipNodeUpdate: true,
		Service: &Service{Kind: KindConnectProxy, ID: "web1", Service: "web", Tags: []string{"a"}, Address: "10.0.0.2", Port: 80, Meta: map[string]string{"v": "1"},
			TaggedAddresses: map[string]model.ServiceAddress{"lan": {Address: "10.0.0.3", Port: 81}},
			Ports:           []model.ServicePort{{Name: "http", Port: 8080, Default: true}}, SocketPath: "/s",
			Weights: &model.Weights{Passing: 2, Warning: 1}, EnableTagOverride: true,
			Locality: &model.Locality{Region: "r", Zone: "z"},
			Proxy: &Proxy{DestinationServiceName: "d", LocalServicePort: 9, Mode: "transparent", Config: map[string]any{"k": "v"},
				Upstreams:        []Upstream{{DestinationName: "db", LocalBindPort: 1, MeshGateway: MeshGateway{Mode: "local"}}},
				TransparentProxy: &TransparentProxy{OutboundListenerPort: 2, DialedDirectly: true},
				Expose:           Expose{Checks: true, Paths: []ExposePath{{ListenerPort: 3, Path: "/p", LocalPathPort: 4, Protocol: "http"}}},
				AccessLogs:       &AccessLogs{Enabled: true, Path: "/log"}}},
		Check:  &Check{Node: "n1", CheckID: "c1", Name: "c", Status: model.HealthPassing, Notes: "n", Output: "o", ServiceID: "web1", Type: "ttl"},
		Checks: []*Check{{Node: "n1", CheckID: "c2", Name: "c2", Status: model.HealthCritical}}}
	// consul/api writes a check's Definition even when empty; the HTTP
	// layer stores it as data.
	emptyDef, err := json.Marshal(&api.HealthCheckDefinition{})
	if err != nil {
		t.Fatal(err)
	}
	want.Check.Definition, want.Checks[0].Definition = emptyDef, emptyDef
	var got Register
	roundTrip(t, theirs, &got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("consul/api's register decoded (-want +got):\n%s", d)
	}

	var back api.CatalogRegistration
	roundTrip(t, want, &back)
	if back.ID != theirs.ID || back.Node != "n1" || back.Address != "10.0.0.1" || !back.SkipNodeUpdate ||
		back.TaggedAddresses["lan"] != "10.0.0.1" || back.NodeMeta["rack"] != "r1" ||
		back.Service == nil || back.Service.ID != "web1" || back.Service.Port != 80 ||
		!reflect.DeepEqual(back.Service.Proxy, theirs.Service.Proxy) || !reflect.DeepEqual(back.Service.Locality, theirs.Service.Locality) ||
		!reflect.DeepEqual(back.Service.Ports, theirs.Service.Ports) || back.Service.Weights != theirs.Service.Weights ||
		!back.Service.EnableTagOverride || back.Service.SocketPath != "/s" || back.Service.TaggedAddresses["lan"].Port != 81 ||
		back.Check == nil || back.Check.Status != "passing" || back.Check.ServiceID != "web1" ||
		len(back.Checks) != 1 || back.Checks[0].CheckID != "c2" {
		t.Errorf("tenure's register as consul/api reads it: %+v", back)
	}

	var dereg Deregister
	roundTrip(t, api.CatalogDeregistration{Node: "n1", ServiceID: "web1", CheckID: "c1"}, &dereg)
	if dereg != (Deregister{Node: "n1", ServiceID: "web1", CheckID: "c1"}) {
		t.Errorf("consul/api's deregister decoded: %+v", dereg)
	}
}

func roundTrip(t *testing.T, from, into any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// TestProxySnakeCaseAliases: a proxy configuration written with Consul's
// snake_case keys decodes as with its field names, and a field name given
// beside its alias wins.
func TestProxySnakeCaseAliases(t *testing.T) {
	var p Proxy
	body := `{"destination_service_name":"web","DestinationServiceName":"own","local_service_port":8080,
		"transparent_proxy":{"outbound_listener_port":15001},
		"Upstreams":[{"destination_name":"db","local_bind_port":9191,"destination_type":"prepared_query"}],
		"Expose":{"Paths":[{"listener_port":21500,"path":"/h","local_path_port":8080}]},
		"access_logs":{"json_format":"{}"}}`
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	want := Proxy{DestinationServiceName: "own", LocalServicePort: 8080,
		TransparentProxy: &TransparentProxy{OutboundListenerPort: 15001},
		Upstreams:        []Upstream{{DestinationName: "db", LocalBindPort: 9191, DestinationType: "prepared_query"}},
		Expose:           Expose{Paths: []ExposePath{{ListenerPort: 21500, Path: "/h", LocalPathPort: 8080}}},
		AccessLogs:       &AccessLogs{JSONFormat: "{}"}}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDetailsCanonical: the stored proxy is the same JSON however the
// configuration was spelled, an empty one is none, and weights that are
// the default or invalid are stored as none.
func TestDetailsCanonical(t *testing.T) {
	details := func(body string) model.ServiceDetails {
		t.Helper()
		var s Service
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			t.Fatal(err)
		}
		d, err := s.Details()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := details(`{"Proxy":{"Config":{"b":1,"a":2},"destination_service_name":"web"}}`)
	b := details(`{"Proxy":{"DestinationServiceName":"web","Config":{"a":2,"b":1}}}`)
	if a.Proxy != b.Proxy || a.Proxy == "" {
		t.Errorf("proxies differ: %s vs %s", a.Proxy, b.Proxy)
	}
	if got := string(ProxyJSON(a.Proxy)); got != a.Proxy {
		t.Errorf("shown %s, stored %s", got, a.Proxy)
	}
	for _, body := range []string{`{"Proxy":{}}`, `{"Proxy":{"TransparentProxy":{},"AccessLogs":{}}}`, `{"Weights":{"Passing":1,"Warning":1}}`,
		`{"Weights":{"Passing":0,"Warning":0}}`, `{"TaggedAddresses":{},"Ports":[]}`} {
		if d := details(body); !d.IsZero() {
			t.Errorf("%s: details %+v, want none", body, d)
		}
	}
	if got := string(ProxyJSON("")); got != `{"Mode":"","MeshGateway":{},"Expose":{}}` {
		t.Errorf("empty proxy shown as %s", got)
	}
}
