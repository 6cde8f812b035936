package httpapi

import (
	"encoding/json"
	"time"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"

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

// txnAnswer is structs.TxnResponse: Results is [] when a committed txn
// has none and null when it failed, Errors null unless it failed. A
// read-only txn's answer is structs.TxnReadResponse, which adds the read's
// metadata.
type txnAnswer struct {
	Results []txnResultJSON
	Errors  []model.TxnError
	*txnReadMeta
}

// txnReadMeta is the part of structs.QueryMeta a read-only txn's answer
// shows. Consul sets Index to 1, its floor for reads that name none.
type txnReadMeta struct {
	Index                 uint64
	LastContact           time.Duration // integer nanoseconds
	KnownLeader           bool
	ConsistencyLevel      string
	NotModified           bool
	Backend               int
	ResultsFilteredByACLs bool
}

type txnResultJSON struct {
	KV      *kvJSON          `json:",omitempty"`
	Node    *nodeJSON        `json:",omitempty"`
	Service *nodeServiceJSON `json:",omitempty"`
	Check   *checkJSON       `json:",omitempty"`
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

// nodeServicesJSON is structs.NodeServices: a node and its services by ID.
type nodeServicesJSON struct {
	Node     *nodeJSON
	Services map[string]nodeServiceJSON
}

// weightsJSON is structs.Weights.
type weightsJSON struct {
	Passing int
	Warning int
}

var defaultWeights = weightsJSON{Passing: 1, Warning: 1}

// serviceWeights shows a service's weights: Consul's default when it has
// none stored.
func serviceWeights(w *model.Weights) weightsJSON {
	if w == nil {
		return defaultWeights
	}
	return weightsJSON(*w)
}

// connectJSON is structs.ServiceConnect, which tenure does not store: every
// service shows it empty, as Consul shows a service without Connect.
type connectJSON struct{}

// nodeServiceJSON is structs.NodeService, in its field order (S55, S74).
type nodeServiceJSON struct {
	Kind              string `json:",omitempty"`
	ID                string
	Service           string
	Tags              []string
	Address           string
	TaggedAddresses   map[string]model.ServiceAddress `json:",omitempty"`
	Meta              map[string]string
	Port              int                 `json:",omitempty"`
	Ports             []model.ServicePort `json:",omitempty"`
	SocketPath        string              `json:",omitempty"`
	Weights           weightsJSON
	EnableTagOverride bool
	Locality          *model.Locality `json:",omitempty"`
	Proxy             json.RawMessage
	Connect           connectJSON
	PeerName          string
	CreateIndex       uint64
	ModifyIndex       uint64
}

// defaultPort is a multi-port service's default port where it has no Port,
// as Consul's catalog service and health service reads show it (the node
// reads show the Port stored).
func defaultPort(sv model.Service) int {
	if sv.Port == 0 {
		for _, p := range sv.Ports {
			if p.Default {
				return p.Port
			}
		}
	}
	return sv.Port
}

func toNodeService(sv model.Service) nodeServiceJSON {
	d := sv.ServiceDetails
	return nodeServiceJSON{Kind: d.Kind, ID: sv.ServiceID, Service: sv.Service, Tags: orEmpty(sv.Tags),
		Address: sv.Address, TaggedAddresses: d.TaggedAddresses, Meta: orEmptyMap(sv.Meta), Port: sv.Port,
		Ports: d.Ports, SocketPath: d.SocketPath, Weights: serviceWeights(d.Weights),
		EnableTagOverride: d.EnableTagOverride, Locality: d.Locality, Proxy: catalogwire.ProxyJSON(d.Proxy),
		CreateIndex: sv.CreateIndex, ModifyIndex: sv.ModifyIndex}
}

// serviceNodeJSON is structs.ServiceNode, what /v1/catalog/service lists.
type serviceNodeJSON struct {
	ID                       string
	Node                     string
	Address                  string
	Datacenter               string
	TaggedAddresses          map[string]string
	NodeMeta                 map[string]string
	ServiceKind              string
	ServiceID                string
	ServiceName              string
	ServiceTags              []string
	ServiceAddress           string
	ServiceTaggedAddresses   map[string]model.ServiceAddress `json:",omitempty"`
	ServiceWeights           weightsJSON
	ServiceMeta              map[string]string
	ServicePort              int
	ServicePorts             []model.ServicePort
	ServiceSocketPath        string
	ServiceEnableTagOverride bool
	ServiceProxy             json.RawMessage
	ServiceConnect           connectJSON
	ServiceLocality          *model.Locality
	CreateIndex              uint64
	ModifyIndex              uint64
}

// checkJSON is the part of structs.HealthCheck tenure stores (S55).
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
	// Interval, Timeout and ExposedPort describe how an agent runs the
	// check; the catalog leaves them empty, as Consul does, and the
	// agent's own list fills Interval and Timeout. Definition is what the
	// catalog stored with the check ({} if nothing).
	Interval    string
	Timeout     string
	ExposedPort int
	Definition  json.RawMessage
	CreateIndex uint64
	ModifyIndex uint64
}

// toChecks shows checks as Consul does: a service check carries its
// service's tags, which tenure reads from the service rather than copying.
func toChecks(s *model.State, cs []model.Check) []checkJSON {
	out := make([]checkJSON, 0, len(cs))
	for _, c := range cs {
		tags := []string{}
		if c.ServiceID != "" {
			if sv, ok := s.Service(model.ServiceKey{Node: c.Node, ServiceID: c.ServiceID}); ok {
				tags = orEmpty(sv.Tags)
			}
		}
		out = append(out, toCheck(c, tags))
	}
	return out
}

func toCheck(c model.Check, tags []string) checkJSON {
	return checkJSON{Node: c.Node, CheckID: c.CheckID, Name: c.Name,
		Status: c.Status, Notes: c.Notes, Output: c.Output, ServiceID: c.ServiceID,
		ServiceName: c.ServiceName, ServiceTags: tags, Type: c.Type, Definition: definitionJSON(c.Definition),
		CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex}
}

// orEmpty shows a missing list as [], as Consul's health reads do.
func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
