package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
)

// TestServiceFieldsReadBack (S74): a catalog register's service keeps every
// field, and each read shows it in Consul's shape: the proxy configuration
// with Consul's empty one for a typical service, weights {1, 1} when the
// client sent invalid ones (consul/api sends {0, 0}), a multi-port
// service's default port as its Port on the service reads only.
func TestServiceFieldsReadBack(t *testing.T) {
	f := newFixture(t)
	proxy := &api.AgentServiceConnectProxyConfig{DestinationServiceName: "web", DestinationServiceID: "web1",
		LocalServiceAddress: "127.0.0.2", LocalServicePort: 8080, Mode: api.ProxyModeTransparent,
		Upstreams: []api.Upstream{{DestinationName: "db", LocalBindPort: 9191,
			Config: map[string]any{"connect_timeout_ms": float64(1000)}},
			{DestinationType: api.UpstreamDestTypePreparedQuery, DestinationName: "geo", LocalBindPort: 8181}},
		TransparentProxy: &api.TransparentProxyConfig{OutboundListenerPort: 808},
		Expose:           api.ExposeConfig{Paths: []api.ExposePath{{ListenerPort: 21500, Path: "/health", LocalPathPort: 8080, Protocol: "http"}}}}
	locality := &api.Locality{Region: "r", Zone: "z"}
	cat := f.client.Catalog()
	for _, svc := range []*api.AgentService{
		{Kind: api.ServiceKindConnectProxy, ID: "web-proxy1", Service: "web-proxy", Port: 8001, Proxy: proxy},
		{ID: "redis1", Service: "redis", Port: 8000, EnableTagOverride: true, Locality: locality,
			TaggedAddresses: map[string]api.ServiceAddress{"lan": {Address: "10.0.0.1", Port: 80}},
			Weights:         api.AgentWeights{Passing: 3, Warning: 2}},
		{ID: "multi", Service: "multi", SocketPath: "/tmp/m.sock",
			Ports: api.ServicePorts{{Name: "http", Port: 8080, Default: true}, {Name: "admin", Port: 9090}}},
	} {
		if _, err := cat.Register(&api.CatalogRegistration{Node: "foobar", Address: "192.168.10.10", Service: svc}, nil); err != nil {
			t.Fatalf("register %s: %v", svc.ID, err)
		}
	}

	services, _, err := cat.Service("web-proxy", "", nil)
	if err != nil || len(services) != 1 {
		t.Fatalf("catalog service: %v %v", services, err)
	}
	if !reflect.DeepEqual(services[0].ServiceProxy, proxy) {
		t.Errorf("catalog service proxy:\n got %+v\nwant %+v", services[0].ServiceProxy, proxy)
	}
	node, _, err := cat.Node("foobar", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Services["web-proxy1"]; got == nil || !reflect.DeepEqual(got.Proxy, proxy) || got.Kind != api.ServiceKindConnectProxy {
		t.Errorf("catalog node proxy: %+v", got)
	}
	redis := node.Services["redis1"]
	if redis == nil || !redis.EnableTagOverride || !reflect.DeepEqual(redis.Locality, locality) ||
		redis.Weights != (api.AgentWeights{Passing: 3, Warning: 2}) || redis.TaggedAddresses["lan"].Port != 80 {
		t.Errorf("catalog node redis1: %+v", redis)
	}
	if m := node.Services["multi"]; m == nil || m.Port != 0 || len(m.Ports) != 2 || m.SocketPath != "/tmp/m.sock" {
		t.Errorf("catalog node multi: %+v", m)
	}
	entries, _, err := f.client.Health().Service("multi", "", false, nil)
	if err != nil || len(entries) != 1 || entries[0].Service.Port != 8080 || len(entries[0].Service.Ports) != 2 {
		t.Errorf("health service multi: %+v %v", entries, err)
	}

	// Shapes as Consul's: a typical service's empty proxy and connect,
	// ServicePorts null and ServiceSocketPath "" on the service list.
	r := f.do(http.MethodGet, "/v1/catalog/node-services/foobar", nil)
	var list struct{ Services []map[string]json.RawMessage }
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Services {
		if string(s["ID"]) == `"redis1"` {
			if string(s["Proxy"]) != `{"Mode":"","MeshGateway":{},"Expose":{}}` || string(s["Connect"]) != "{}" {
				t.Errorf("typical service's proxy and connect: %s %s", s["Proxy"], s["Connect"])
			}
		}
	}
	r = f.do(http.MethodGet, "/v1/catalog/service/redis", nil)
	if !strings.Contains(r.text(), `"ServicePorts":null,"ServiceSocketPath":""`) || !strings.Contains(r.text(), `"ServiceLocality":{"Region":"r","Zone":"z"}`) {
		t.Errorf("catalog service redis: %s", r.text())
	}
	// consul/api sends Weights {0, 0} when none are set: stored as the default.
	if _, err := cat.Register(&api.CatalogRegistration{Node: "foobar", Address: "192.168.10.10",
		Service: &api.AgentService{ID: "plain", Service: "plain"}}, nil); err != nil {
		t.Fatal(err)
	}
	plain, _, err := cat.Service("plain", "", nil)
	if err != nil || len(plain) != 1 || plain[0].ServiceWeights != (api.Weights{Passing: 1, Warning: 1}) {
		t.Errorf("plain service's weights: %+v %v", plain, err)
	}

	// A proxy without a destination is refused and writes nothing.
	r = f.doJSON(http.MethodPut, "/v1/catalog/register", map[string]any{"Node": "foobar", "Address": "192.168.10.10",
		"Service": map[string]any{"Kind": "connect-proxy", "Service": "bad", "Port": 1}})
	want(t, "proxy without destination", r, 400, "Proxy.DestinationServiceName must be non-empty for Connect proxy services")
	if bad, _, _ := cat.Service("bad", "", nil); len(bad) != 0 {
		t.Errorf("refused register wrote %+v", bad)
	}
}

// TestPreparedQueryKeepsRemoveEmptyTags: Template.RemoveEmptyTags is kept
// and shown as given.
func TestPreparedQueryKeepsRemoveEmptyTags(t *testing.T) {
	f := newFixture(t)
	q := f.client.PreparedQuery()
	def := &api.PreparedQueryDefinition{Name: "test", Service: api.ServiceQuery{Service: "redis"},
		Template: api.QueryTemplate{RemoveEmptyTags: true}}
	id, _, err := q.Create(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := q.Get(id, nil)
	if err != nil || len(got) != 1 || !got[0].Template.RemoveEmptyTags {
		t.Fatalf("after create: %+v %v", got, err)
	}
	def.ID, def.Template.RemoveEmptyTags = id, false
	if _, err := q.Update(def, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, err = q.Get(id, nil); err != nil || got[0].Template.RemoveEmptyTags {
		t.Fatalf("after update: %+v %v", got, err)
	}
}
