package model

import (
	"slices"
	"strings"
)

// Catalog reads over services (S55, S59), for the HTTP layer's catalog and
// health endpoints and for query execution.

// ServiceInstance is one service instance with its node and the checks that
// decide its health: the node's own checks (no ServiceID, such as
// serfHealth) and the service's, sorted by check ID.
type ServiceInstance struct {
	Node    Node
	Service Service
	Checks  []Check
}

// Service returns a service instance by node (compared ignoring case) and ID.
func (s *State) Service(key ServiceKey) (Service, bool) {
	key.Node = s.nodeKey(key.Node)
	sv, ok := s.services[key]
	return sv, ok
}

// ServiceList returns the services of node (all nodes if ""), sorted by
// node then service ID.
func (s *State) ServiceList(node string) []Service {
	node = s.nodeKey(node)
	var out []Service
	for _, sv := range s.services {
		if node == "" || sv.Node == node {
			out = append(out, sv)
		}
	}
	slices.SortFunc(out, compareServices)
	return out
}

func compareServices(a, b Service) int {
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	return strings.Compare(a.ServiceID, b.ServiceID)
}

// ServiceNames maps every service name to the union of its instances'
// tags, sorted and without repeats (what /v1/catalog/services lists),
// counting only instances on nodes onNode keeps (all, if nil).
func (s *State) ServiceNames(onNode func(Node) bool) map[string][]string {
	out := map[string][]string{}
	for _, sv := range s.ServiceList("") {
		if onNode != nil && !onNode(s.nodes[sv.Node]) {
			continue
		}
		tags := append(out[sv.Service], sv.Tags...)
		slices.Sort(tags)
		out[sv.Service] = slices.Compact(tags)
		if out[sv.Service] == nil {
			out[sv.Service] = []string{}
		}
	}
	return out
}

// ServiceInstances returns the instances of the service named name
// (compared case-insensitively, as Consul's index does), sorted by node then
// service ID, each with its node and health checks.
func (s *State) ServiceInstances(name string) []ServiceInstance {
	var out []ServiceInstance
	for _, sv := range s.ServiceList("") {
		if !strings.EqualFold(sv.Service, name) {
			continue
		}
		in := ServiceInstance{Node: s.nodes[sv.Node], Service: sv}
		for _, c := range s.CheckList(sv.Node, "") {
			if c.ServiceID == "" || c.ServiceID == sv.ServiceID {
				in.Checks = append(in.Checks, c)
			}
		}
		out = append(out, in)
	}
	return out
}

// ServiceChecks returns the checks of every instance of the service named
// name, without node checks, sorted by node then check ID.
func (s *State) ServiceChecks(name string) []Check {
	var out []Check
	for _, c := range s.CheckList("", "") {
		if c.ServiceID != "" && strings.EqualFold(c.ServiceName, name) {
			out = append(out, c)
		}
	}
	return out
}
