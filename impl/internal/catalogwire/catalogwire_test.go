package catalogwire

import (
	"encoding/json"
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
		Service:        &api.AgentService{ID: "web1", Service: "web", Tags: []string{"a"}, Address: "10.0.0.2", Port: 80, Meta: map[string]string{"v": "1"}},
		Check:          &api.AgentCheck{Node: "n1", CheckID: "c1", Name: "c", Status: "passing", Notes: "n", Output: "o", ServiceID: "web1", Type: "ttl"},
		Checks:         api.HealthChecks{{Node: "n1", CheckID: "c2", Name: "c2", Status: "critical"}}}
	want := Register{ID: theirs.ID, Node: "n1", Address: "10.0.0.1", TaggedAddresses: theirs.TaggedAddresses,
		NodeMeta: theirs.NodeMeta, SkipNodeUpdate: true,
		Service: &Service{ID: "web1", Service: "web", Tags: []string{"a"}, Address: "10.0.0.2", Port: 80, Meta: map[string]string{"v": "1"}},
		Check:   &Check{Node: "n1", CheckID: "c1", Name: "c", Status: model.HealthPassing, Notes: "n", Output: "o", ServiceID: "web1", Type: "ttl"},
		Checks:  []*Check{{Node: "n1", CheckID: "c2", Name: "c2", Status: model.HealthCritical}}}
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
