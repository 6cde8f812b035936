package httpapi_test

import (
	"slices"
	"testing"

	"github.com/hashicorp/consul/api"
)

// An instance's checks list the node's first and then the service's, each
// in check-ID order, as Consul's health and prepared-query answers do, even
// where a service check's ID sorts before a node check's.
func TestHealthServiceChecksNodeFirst(t *testing.T) {
	f := newFixture(t)
	_, err := f.client.Catalog().Register(&api.CatalogRegistration{
		Node: "n1", Address: "10.0.0.1",
		Service: &api.AgentService{ID: "o1", Service: "ord", Port: 1},
		Checks: api.HealthChecks{
			{CheckID: "zzz", Name: "z", Status: "passing"},
			{CheckID: "aaa", Name: "a", Status: "passing", ServiceID: "o1"},
			{CheckID: "mmm", Name: "m", Status: "passing"},
		},
	}, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	entries, _, err := f.client.Health().Service("ord", "", false, nil)
	if err != nil || len(entries) != 1 {
		t.Fatalf("health service: %+v %v", entries, err)
	}
	var ids []string
	for _, c := range entries[0].Checks {
		ids = append(ids, c.CheckID)
	}
	if want := []string{"mmm", "zzz", "aaa"}; !slices.Equal(ids, want) {
		t.Fatalf("check order %v, want %v", ids, want)
	}
	// The node's own list stays in check-ID order.
	checks, _, err := f.client.Health().Node("n1", nil)
	ids = ids[:0]
	for _, c := range checks {
		ids = append(ids, c.CheckID)
	}
	if want := []string{"aaa", "mmm", "zzz"}; err != nil || !slices.Equal(ids, want) {
		t.Fatalf("health node order %v %v, want %v", ids, err, want)
	}
}
