package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"time"

	"github.com/hashicorp/consul/api"
)

// A registration's fields come back as registered (S74), on every read
// that shows the service; and the agent's health-by-service endpoints
// answer with Consul's codes (S61). Both go through the agent API only,
// so that they run on real Consul too.

func serviceFieldCases() []Case {
	return []Case{
		{clause: "S74", name: "agent-registration-fields-read-back", run: s74FieldsReadBack},
		{clause: "S74", name: "service-meta-refused-with-consul-reasons", run: s74MetaRules},
		{clause: "S61", name: "agent-health-by-service-codes", run: s61AgentServiceHealth},
	}
}

// svcFields is what S74 compares of one service, from any read's shape.
// Empty lists, maps and a proxy with nothing set compare as absent: the
// catalog shows a typical service's empty proxy configuration, the agent
// shows none.
type svcFields struct {
	Kind              string
	Tags              []string
	Meta              map[string]string
	Port              int
	Ports             api.ServicePorts
	Address           string
	SocketPath        string
	TaggedAddresses   map[string]api.ServiceAddress
	Weights           api.AgentWeights
	EnableTagOverride bool
	Locality          *api.Locality
	Proxy             *api.AgentServiceConnectProxyConfig
}

func (f svcFields) normalized() svcFields {
	if len(f.Tags) == 0 {
		f.Tags = nil
	}
	if len(f.Meta) == 0 {
		f.Meta = nil
	}
	if len(f.Ports) == 0 {
		f.Ports = nil
	}
	// Consul's catalog gives a transparent proxy a virtual IP of its own
	// (consul-virtual), which is Connect's; tenure runs no Connect.
	if _, ok := f.TaggedAddresses["consul-virtual"]; ok {
		f.TaggedAddresses = maps.Clone(f.TaggedAddresses)
		delete(f.TaggedAddresses, "consul-virtual")
	}
	if len(f.TaggedAddresses) == 0 {
		f.TaggedAddresses = nil
	}
	if f.Proxy != nil && reflect.DeepEqual(*f.Proxy, api.AgentServiceConnectProxyConfig{}) {
		f.Proxy = nil
	}
	return f
}

func agentFields(s *api.AgentService) svcFields {
	return svcFields{Kind: string(s.Kind), Tags: s.Tags, Meta: s.Meta, Port: s.Port, Ports: s.Ports,
		Address: s.Address, SocketPath: s.SocketPath, TaggedAddresses: s.TaggedAddresses, Weights: s.Weights,
		EnableTagOverride: s.EnableTagOverride, Locality: s.Locality, Proxy: s.Proxy}.normalized()
}

// catalogService is structs.ServiceNode as /v1/catalog/service lists it
// (consul/api's CatalogService leaves out ServiceKind, ServicePorts and
// ServiceSocketPath).
type catalogService struct {
	ServiceID                string
	ServiceKind              string
	ServiceTags              []string
	ServiceMeta              map[string]string
	ServicePort              int
	ServicePorts             api.ServicePorts
	ServiceAddress           string
	ServiceSocketPath        string
	ServiceTaggedAddresses   map[string]api.ServiceAddress
	ServiceWeights           api.AgentWeights
	ServiceEnableTagOverride bool
	ServiceLocality          *api.Locality
	ServiceProxy             *api.AgentServiceConnectProxyConfig
}

func catalogFields(s *catalogService) svcFields {
	return svcFields{Kind: s.ServiceKind, Tags: s.ServiceTags, Meta: s.ServiceMeta, Port: s.ServicePort,
		Ports: s.ServicePorts, Address: s.ServiceAddress, SocketPath: s.ServiceSocketPath,
		TaggedAddresses: s.ServiceTaggedAddresses, Weights: s.ServiceWeights,
		EnableTagOverride: s.ServiceEnableTagOverride, Locality: s.ServiceLocality, Proxy: s.ServiceProxy}.normalized()
}

// registered is one service of the case: its registration body and what
// every read must show of it (entry: the catalog's and health's).
type registered struct {
	short        string // the name given to RegisterAgentService
	id, name     string
	body         map[string]any
	agent, entry svcFields
}

// s74FieldsReadBack registers, through the agent, a typical service with
// every addressing and weighting field set, a multi-port service, a
// service on a socket and a connect proxy, and reads each back from the
// agent (one service, all services), the catalog (by service, by node, the
// node's service list) and health: every field is as registered, plus the
// lan_ipv4 and wan_ipv4 addresses an agent adds for an IPv4 address.
func s74FieldsReadBack(t *caseT) {
	node := t.AgentNode()
	typical := t.ServiceName("fields")
	multi := t.ServiceName("multiport")
	socket := t.ServiceName("socket")
	proxy := t.ServiceName("proxy")
	shorts := map[string]string{typical: "fields", multi: "multiport", socket: "socket", proxy: "proxy"}
	up := api.Upstream{DestinationType: api.UpstreamDestTypeService, DestinationName: "db", LocalBindPort: 9191,
		Config: map[string]any{"connect_timeout_ms": float64(1000)}}
	query := api.Upstream{DestinationType: api.UpstreamDestTypePreparedQuery, DestinationName: "geo", LocalBindPort: 8181}
	proxyConf := api.AgentServiceConnectProxyConfig{DestinationServiceName: typical, DestinationServiceID: typical,
		LocalServiceAddress: "127.0.0.1", LocalServicePort: 8080, Mode: api.ProxyModeTransparent,
		Config:           map[string]any{"protocol": "http"},
		Upstreams:        []api.Upstream{up, query},
		TransparentProxy: &api.TransparentProxyConfig{OutboundListenerPort: 15001},
		Expose:           api.ExposeConfig{Paths: []api.ExposePath{{ListenerPort: 21500, Path: "/health", LocalPathPort: 8080, Protocol: "http"}}}}
	locality := &api.Locality{Region: "r1", Zone: "z1"}
	typicalAddrs := map[string]api.ServiceAddress{"lan": {Address: "10.0.0.7", Port: 80},
		"lan_ipv4": {Address: "127.0.0.7", Port: 8080}, "wan_ipv4": {Address: "127.0.0.7", Port: 8080}}
	ports := api.ServicePorts{{Name: "http", Port: 8080, Default: true}, {Name: "admin", Port: 9090}}
	one := api.AgentWeights{Passing: 1, Warning: 1}
	services := []registered{
		{id: typical, name: typical, body: map[string]any{"Address": "127.0.0.7", "Port": 8080,
			"Tags": []string{"b", "a"}, "Meta": map[string]string{"version": "2"},
			"TaggedAddresses":   map[string]api.ServiceAddress{"lan": {Address: "10.0.0.7", Port: 80}},
			"Weights":           api.AgentWeights{Passing: 5, Warning: 2},
			"EnableTagOverride": true, "Locality": locality},
			agent: svcFields{Tags: []string{"b", "a"}, Meta: map[string]string{"version": "2"}, Port: 8080,
				Address: "127.0.0.7", TaggedAddresses: typicalAddrs, Weights: api.AgentWeights{Passing: 5, Warning: 2},
				EnableTagOverride: true, Locality: locality}},
		{id: multi, name: multi, body: map[string]any{"Ports": ports},
			agent: svcFields{Port: 8080, Ports: ports, Weights: one}},
		{id: socket, name: socket, body: map[string]any{"SocketPath": "/tmp/conformance.sock"},
			agent: svcFields{SocketPath: "/tmp/conformance.sock", Weights: one}},
		{id: proxy, name: proxy, body: map[string]any{"Kind": "connect-proxy", "Port": 21000, "Proxy": proxyConf},
			agent: svcFields{Kind: "connect-proxy", Port: 21000, Weights: one, Proxy: &proxyConf}},
	}
	for i := range services {
		s := &services[i]
		s.entry = s.agent
		s.short = shorts[s.id]
		t.RegisterAgentService(s.short, s.body)
	}

	compare := func(where string, s registered, got, want svcFields) {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: service %s:\n got  %+v\n want %+v", where, s.id, show(got), show(want))
		}
	}
	all := map[string]*api.AgentService{}
	r := t.Do(http.MethodGet, "/v1/agent/services", nil)
	t.Require(r.Code == 200, "agent services: %s", r)
	t.decode("agent services", r, &all)
	for _, s := range services {
		var one api.AgentService
		r := t.Do(http.MethodGet, "/v1/agent/service/"+url.PathEscape(s.id), nil)
		if !t.Check(r.Code == 200, "agent service %s: %s", s.id, r) {
			continue
		}
		t.decode("agent service", r, &one)
		compare("/v1/agent/service", s, agentFields(&one), s.agent)
		if a := all[s.id]; t.Check(a != nil, "/v1/agent/services lacks %s", s.id) {
			compare("/v1/agent/services", s, agentFields(a), s.agent)
		}
	}

	for _, s := range services {
		var list []*catalogService
		t.WaitFor("service "+s.id+" in the catalog", 10*time.Second, 100*time.Millisecond, func() bool {
			r := t.Do(http.MethodGet, "/v1/catalog/service/"+url.PathEscape(s.name), nil)
			list = nil
			t.decode("catalog service", r, &list)
			return len(list) == 1
		})
		// The service reads show a multi-port service's default port as its
		// Port, the node reads the Port registered (none).
		compare("/v1/catalog/service", s, catalogFields(list[0]), s.entry)

		var health []*api.ServiceEntry
		r := t.Do(http.MethodGet, "/v1/health/service/"+url.PathEscape(s.name), nil)
		t.decode("health service", r, &health)
		if t.Check(len(health) == 1 && health[0].Service != nil, "health service %s: %s", s.name, r) {
			compare("/v1/health/service", s, agentFields(health[0].Service), s.entry)
		}
	}

	var byNode api.CatalogNode
	r = t.Do(http.MethodGet, "/v1/catalog/node/"+url.PathEscape(node), nil)
	t.decode("catalog node", r, &byNode)
	var list api.CatalogNodeServiceList
	r = t.Do(http.MethodGet, "/v1/catalog/node-services/"+url.PathEscape(node), nil)
	t.decode("catalog node services", r, &list)
	for _, s := range services {
		if s.id == multi {
			s.entry.Port = 0
		}
		if sv := byNode.Services[s.id]; t.Check(sv != nil, "/v1/catalog/node/%s lacks %s", node, s.id) {
			compare("/v1/catalog/node", s, agentFields(sv), s.entry)
		}
		var found *api.AgentService
		for _, sv := range list.Services {
			if sv.ID == s.id {
				found = sv
			}
		}
		if t.Check(found != nil, "/v1/catalog/node-services/%s lacks %s", node, s.id) {
			compare("/v1/catalog/node-services", s, agentFields(found), s.entry)
		}
	}
}

// s61AgentServiceHealth: /v1/agent/health/service/id/<id> and
// /name/<name> answer 200 passing, 429 warning, 503 critical and 404 for a
// service the agent does not have, with the status as the text body when
// asked (?format=text); by name, the worst instance decides. The agent's
// node checks count as well, and other cases may register some (a TTL
// check left to expire goes critical), so each answer is checked against
// the checks it lists, and against the status the case set when those are
// only the service's own.
func s61AgentServiceHealth(t *caseT) {
	name := t.ServiceName("health")
	a := t.RegisterAgentService("health-a", map[string]any{"Name": name, "Check": map[string]any{"TTL": "1h", "Status": "passing"}})
	b := t.RegisterAgentService("health-b", map[string]any{"Name": name, "Check": map[string]any{"TTL": "1h", "Status": "critical"}})
	ghost := t.ServiceName("ghost")
	codes := map[string]int{"passing": 200, "warning": 429, "critical": 503, "maintenance": 503}
	rank := map[int]int{200: 0, 429: 1, 503: 2}
	// aggregate is the status info's checks add up to, and whether they
	// are the service's own check alone.
	aggregate := func(info api.AgentServiceChecksInfo, own string) (string, bool) {
		alone := true
		for _, c := range info.Checks {
			alone = alone && c.ServiceID == own
		}
		return info.Checks.AggregatedStatus(), alone
	}
	text := func(path string) {
		r := t.Do(http.MethodGet, path+"?format=text", nil)
		want, ok := codes[r.Text()]
		t.Check(ok && r.Code == want, "%s as text: got %s", path, r)
	}
	byID := func(id, status string) {
		path := "/v1/agent/health/service/id/" + url.PathEscape(id)
		r := t.Do(http.MethodGet, path, nil)
		var info api.AgentServiceChecksInfo
		t.decode("health by id", r, &info)
		agg, alone := aggregate(info, id)
		t.Check(r.Code == codes[agg] && info.AggregatedStatus == agg, "%s: checks add up to %s, got %s", path, agg, r)
		if alone {
			t.Check(agg == status, "%s: want %s, got %s", path, status, r)
		}
		if t.Check(info.Service != nil, "%s names no service", path) {
			t.Equal("service of "+path, info.Service.ID, id)
		}
		own := false
		for _, c := range info.Checks {
			own = own || (c.CheckID == "service:"+id && c.Status == status)
		}
		t.Check(own, "%s does not list service:%s as %s", path, id, status)
		text(path)
	}
	byName := func(status string) {
		path := "/v1/agent/health/service/name/" + url.PathEscape(name)
		r := t.Do(http.MethodGet, path, nil)
		var infos []api.AgentServiceChecksInfo
		t.decode("health by name", r, &infos)
		worst, allAlone, ids := 200, true, map[string]bool{}
		for _, in := range infos {
			if in.Service == nil {
				continue
			}
			ids[in.Service.ID] = true
			agg, alone := aggregate(in, in.Service.ID)
			allAlone = allAlone && alone
			if rank[codes[agg]] > rank[worst] {
				worst = codes[agg]
			}
		}
		t.Check(len(infos) == 2 && ids[a] && ids[b], "%s lists %v", path, ids)
		t.Check(r.Code == worst, "%s: worst instance answers %d, got %s", path, worst, r)
		if allAlone {
			t.Check(r.Code == codes[status], "%s: want %s, got %s", path, status, r)
		}
		text(path)
	}
	byID(a, "passing")
	byID(b, "critical")
	byName("critical")
	t.agentPut("/v1/agent/check/pass/"+url.PathEscape("service:"+b), nil)
	t.agentPut("/v1/agent/check/warn/"+url.PathEscape("service:"+a), nil)
	byID(a, "warning")
	byName("warning")
	t.agentPut("/v1/agent/check/pass/"+url.PathEscape("service:"+a), nil)
	byName("passing")

	r := t.Do(http.MethodGet, "/v1/agent/health/service/id/"+url.PathEscape(ghost)+"?format=text", nil)
	t.Check(r.Code == 404 && r.Text() == fmt.Sprintf("ServiceId %s not found", ghost), "health of unknown ID: %s", r)
	r = t.Do(http.MethodGet, "/v1/agent/health/service/id/"+url.PathEscape(ghost), nil)
	var info api.AgentServiceChecksInfo
	if t.Check(r.Code == 404, "health of unknown ID as JSON: %s", r) {
		t.decode("health of unknown ID", r, &info)
		t.Check(info.AggregatedStatus == "critical" && info.Service == nil, "health of unknown ID: %s", r)
	}
	r = t.Do(http.MethodGet, "/v1/agent/health/service/name/"+url.PathEscape(ghost)+"?format=text", nil)
	t.Check(r.Code == 404 && r.Text() == fmt.Sprintf("ServiceName %s Not Found", ghost), "health of unknown name: %s", r)
	r = t.Do(http.MethodGet, "/v1/agent/health/service/name/"+url.PathEscape(ghost), nil)
	t.Check(r.Code == 404 && r.Text() == "[]", "health of unknown name as JSON: %s", r)
}

// s74MetaRules: a service whose meta breaks Consul's rules is refused by
// the agent register (400) and the catalog register (tenure 400, Consul
// 500 with "failed inserting service: " before the reason), naming the
// pair, and registers nothing; a txn reports it as the op's error, beside
// an earlier op's; a mesh gateway may carry
// consul-wan-federation, and a key of 128 characters and a value of 512
// pass.
func s74MetaRules(t *caseT) {
	node, name := t.HomeNode(), t.ServiceName("meta")
	pair := "Couldn't load metadata pair ('a b', 'y'): Key contains invalid characters"
	for _, c := range []struct {
		what string
		meta map[string]string
		text string
	}{
		{"a space in a key", map[string]string{"a b": "y"}, pair},
		{"a reserved key", map[string]string{"consul-x": "y"}, "Couldn't load metadata pair ('consul-x', 'y'): Key prefix 'consul-' is reserved for internal use"},
		{"a long value", map[string]string{"k": fmt.Sprintf("%0513d", 0)}, fmt.Sprintf("Couldn't load metadata pair ('k', '%0513d'): Value is too long (limit: 512 characters)", 0)},
	} {
		r := t.Do(http.MethodPut, "/v1/agent/service/register", mustJSON(map[string]any{"Name": name, "Port": 1, "Meta": c.meta}))
		t.Check(r.Code == 400 && r.Text() == "Invalid Service Meta: "+c.text, "agent register with %s: got %s, want 400 %q", c.what, r, "Invalid Service Meta: "+c.text)
		r = t.Do(http.MethodPut, "/v1/catalog/register", mustJSON(map[string]any{"Node": node, "Address": "127.0.0.1",
			"Service": map[string]any{"Service": name, "ID": name, "Meta": c.meta}}))
		want := "Invalid Service Meta for node " + node + " and serviceID " + name + ": " + c.text
		t.Check((r.Code == 400 && r.Text() == want) || (r.Code == 500 && r.Text() == "failed inserting service: "+want),
			"catalog register with %s: got %s, want 400 (500 on Consul, after 'failed inserting service: ') %q", c.what, r, want)
	}
	r := t.Do(http.MethodPut, "/v1/txn", mustJSON([]any{map[string]any{"Service": map[string]any{"Verb": "set", "Node": node,
		"Service": map[string]any{"ID": name, "Service": name, "Meta": map[string]string{"a b": "y"}}}}}))
	var txnOut struct {
		Results []any
		Errors  []struct {
			OpIndex int
			What    string
		}
	}
	wantWhat := "Invalid Service Meta for node " + node + " and serviceID " + name + ": " + pair
	t.Check(r.Code == 409 && json.Unmarshal(r.Body, &txnOut) == nil && txnOut.Results == nil && len(txnOut.Errors) == 1 &&
		txnOut.Errors[0].OpIndex == 0 && txnOut.Errors[0].What == wantWhat,
		"txn service set with a space in a meta key: got %s, want 409 with one error at op 0: %q", r, wantWhat)
	// The meta rule is one of the op's own failures, found as the ops run:
	// an earlier op that fails too is reported first, beside it.
	stale := t.Key("meta-cas")
	r = t.Do(http.MethodPut, "/v1/txn", mustJSON([]any{
		map[string]any{"KV": map[string]any{"Verb": "cas", "Key": stale, "Index": 7, "Value": "eA=="}},
		map[string]any{"Service": map[string]any{"Verb": "set", "Node": node,
			"Service": map[string]any{"ID": name, "Service": name, "Meta": map[string]string{"a b": "y"}}}}}))
	txnOut.Errors = nil
	t.Check(r.Code == 409 && json.Unmarshal(r.Body, &txnOut) == nil && len(txnOut.Errors) == 2 &&
		txnOut.Errors[0].OpIndex == 0 && txnOut.Errors[1].OpIndex == 1 && txnOut.Errors[1].What == wantWhat,
		"txn of a stale cas and then a service with a space in a meta key: got %s, want 409 with an error at op 0 and %q at op 1", r, wantWhat)
	if r := t.Do(http.MethodGet, "/v1/catalog/service/"+url.PathEscape(name), nil); t.Check(r.Code == 200, "catalog service: %s", r) {
		t.Check(r.Text() == "[]", "a refused register is in the catalog: %s", r.Text())
	}
	long := map[string]string{fmt.Sprintf("%0128d", 0): fmt.Sprintf("%0512d", 0)}
	gw := t.ServiceName("gw")
	for _, body := range []map[string]any{
		{"Name": name, "Port": 1, "Meta": long},
		{"Name": gw, "Kind": "mesh-gateway", "Port": 1, "Meta": map[string]string{"consul-wan-federation": "1"}},
	} {
		r := t.Do(http.MethodPut, "/v1/agent/service/register", mustJSON(body))
		t.Check(r.Code == 200, "agent register %v: got %s, want 200", body["Name"], r)
		t.Do(http.MethodPut, "/v1/agent/service/deregister/"+url.PathEscape(body["Name"].(string)), nil)
	}
}
