package httpapi

import (
	"time"

	"github.com/tenurekv/tenure/model"
)

// The answer shapes below follow Consul's field names and order (CONSUL.md §5,
// §6, §8); encoding/json keeps struct order.

// sessionJSON is structs.Session as Consul encodes it: NodeChecks and
// ServiceChecks as created, the legacy Checks only when the create's fixup
// kept it (S56).
type sessionJSON struct {
	ID            string
	Name          string
	Node          string
	LockDelay     time.Duration // integer nanoseconds
	Behavior      model.Behavior
	TTL           string
	NodeChecks    []string
	ServiceChecks []serviceCheckJSON // null when empty, as in Consul
	Checks        []string           `json:",omitempty"`
	CreateIndex   uint64
	ModifyIndex   uint64
}

type serviceCheckJSON struct {
	ID        string
	Namespace string
}

func toSession(s model.Session) sessionJSON {
	node := s.NodeChecks
	if node == nil {
		node = []string{}
	}
	var service []serviceCheckJSON
	for _, sc := range s.ServiceChecks {
		service = append(service, serviceCheckJSON(sc))
	}
	return sessionJSON{ID: s.ID, Name: s.Name, Node: s.Node, LockDelay: s.LockDelay,
		Behavior: s.Behavior, TTL: s.TTL, NodeChecks: node, ServiceChecks: service, Checks: s.Checks,
		CreateIndex: s.CreateIndex, ModifyIndex: s.ModifyIndex}
}

func toSessions(ss []model.Session) []sessionJSON {
	out := make([]sessionJSON, 0, len(ss))
	for _, s := range ss {
		out = append(out, toSession(s))
	}
	return out
}

// kvJSON is structs.DirEntry: Value is base64, or null when empty.
type kvJSON struct {
	LockIndex   uint64
	Key         string
	Flags       uint64
	Value       []byte
	Session     string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

func toKV(e model.KVEntry) kvJSON {
	v := e.Value
	if len(v) == 0 {
		v = nil
	}
	return kvJSON{LockIndex: e.LockIndex, Key: e.Key, Flags: e.Flags, Value: v,
		Session: e.Session, CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex}
}

// txnAnswer is structs.TxnResponse. Both lists are null when empty.
type txnAnswer struct {
	Results []txnResultJSON
	Errors  []model.TxnError
}

type txnResultJSON struct {
	KV *kvJSON `json:",omitempty"`
}

// nodeJSON is the part of structs.Node tenure models.
type nodeJSON struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	Meta            map[string]string
	CreateIndex     uint64
	ModifyIndex     uint64
}

// nodeServicesJSON is structs.NodeServices; tenure has no services.
type nodeServicesJSON struct {
	Node     *nodeJSON
	Services map[string]any
}

// checkJSON is the part of structs.HealthCheck tenure models; the service
// fields are always empty because tenure has node checks only.
type checkJSON struct {
	Node        string
	CheckID     string
	Name        string
	Status      model.Health
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	ServiceTags []string
	Type        string
	CreateIndex uint64
	ModifyIndex uint64
}

func toChecks(cs []model.Check) []checkJSON {
	out := make([]checkJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, checkJSON{Node: c.Node, CheckID: c.CheckID, Name: c.Name,
			Status: c.Status, ServiceTags: []string{},
			CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex})
	}
	return out
}
