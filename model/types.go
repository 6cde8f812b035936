package model

import (
	"maps"
	"slices"
	"time"
)

// Limits and defaults taken from Consul (spec/SPEC.md S2, S3, S5, S39, S44).
const (
	DefaultLockDelay  = 15 * time.Second
	MaxLockDelay      = 60 * time.Second
	MinSessionTTL     = 10 * time.Second
	MaxSessionTTL     = 24 * time.Hour
	MaxValueSize      = 512 * 1024
	MaxTxnOps         = 128
	SerfHealthCheckID = "serfHealth"
)

// Health is a check status.
type Health string

// The three check statuses Consul knows.
const (
	HealthPassing  Health = "passing"
	HealthWarning  Health = "warning"
	HealthCritical Health = "critical"
)

// Valid reports whether h is one of the three statuses.
func (h Health) Valid() bool {
	return h == HealthPassing || h == HealthWarning || h == HealthCritical
}

// Behavior says what invalidation does to the keys a session holds.
type Behavior string

// Session behaviours (S4, S16, S17).
const (
	BehaviorRelease Behavior = "release"
	BehaviorDelete  Behavior = "delete"
)

// Node is a catalog node. ID is the agent's node UUID (empty for a node
// registered without one); it follows the node through a rename (S62).
type Node struct {
	Name            string
	ID              string `json:",omitempty"`
	Address         string
	TaggedAddresses map[string]string // nil and empty differ, as in Consul's JSON
	Meta            map[string]string
	CreateIndex     uint64
	ModifyIndex     uint64
}

// sameInfo reports whether n and o describe the node alike, indexes aside:
// a register that changes none of it writes nothing (S62).
func (n Node) sameInfo(o Node) bool {
	return n.Name == o.Name && n.ID == o.ID && n.Address == o.Address &&
		sameMap(n.TaggedAddresses, o.TaggedAddresses) && sameMap(n.Meta, o.Meta)
}

// sameMap is maps.Equal that also tells nil from empty: Consul compares
// node fields deeply, so a register with empty meta over none is a write.
func sameMap(a, b map[string]string) bool {
	return (a == nil) == (b == nil) && maps.Equal(a, b)
}

func nodeEqual(a, b Node) bool {
	return a.sameInfo(b) && a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

// Check is a health check registered on a node. A check with a ServiceID
// belongs to that service of the same node and goes with it (S55);
// ServiceName is the service's name, kept in step by the model.
type Check struct {
	Node        string
	CheckID     string
	Name        string
	Status      Health
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	// Type is the agent's check kind ("ttl", "http", ...) as the catalog
	// stores it; the model gives it no meaning.
	Type string
	// Definition is how an agent runs the check (its HTTP URL, TCP
	// address, interval, …), as the HTTP layer encodes it; the catalog
	// stores and returns it and the model gives it no meaning.
	Definition  string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// Service is one service instance registered on a node (S55). Service IDs
// are unique per node only.
type Service struct {
	Node      string
	ServiceID string
	Service   string // the service's name, which queries look up
	Tags      []string
	Address   string
	Port      int
	Meta      map[string]string
	// ServiceDetails are the rest of what a registration carries, kept and
	// shown as registered (S74).
	ServiceDetails
	CreateIndex uint64
	ModifyIndex uint64
}

// ServiceDetails are the fields of a service registration the model keeps
// without giving them meaning: kept as registered and shown back (S74). The
// zero value is a typical service with Consul's defaults, which is what an
// entry or snapshot written before these fields existed decodes to.
type ServiceDetails struct {
	// Kind is "" for a typical service, or "connect-proxy", a gateway kind….
	Kind            string                    `json:",omitempty"`
	TaggedAddresses map[string]ServiceAddress `json:",omitempty"`
	// Ports are named ports (Consul's multi-port services), instead of Port.
	Ports      []ServicePort `json:",omitempty"`
	SocketPath string        `json:",omitempty"`
	// Weights is nil for Consul's default, passing 1 and warning 1.
	Weights           *Weights  `json:",omitempty"`
	EnableTagOverride bool      `json:",omitempty"`
	Locality          *Locality `json:",omitempty"`
	// Proxy is a connect proxy's or gateway's configuration as canonical
	// JSON, "" for none. The HTTP layer owns its shape; tenure runs no
	// Connect, so it is only stored and shown.
	Proxy string `json:",omitempty"`
}

// ServiceAddress is one of a service's tagged addresses.
type ServiceAddress struct {
	Address string
	Port    int
}

// ServicePort is one named port of a multi-port service.
type ServicePort struct {
	Name    string
	Port    int
	Default bool
}

// Weights are a service's DNS weights by health.
type Weights struct {
	Passing int
	Warning int
}

// Locality is where a service runs.
type Locality struct {
	Region string
	Zone   string
}

// IsZero reports whether d is all defaults.
func (d ServiceDetails) IsZero() bool {
	return d.Equal(ServiceDetails{})
}

// Equal compares two details; nil and empty lists and maps are alike.
func (d ServiceDetails) Equal(o ServiceDetails) bool {
	return d.Kind == o.Kind && maps.Equal(d.TaggedAddresses, o.TaggedAddresses) &&
		slices.Equal(d.Ports, o.Ports) && d.SocketPath == o.SocketPath &&
		ptrEqual(d.Weights, o.Weights) && d.EnableTagOverride == o.EnableTagOverride &&
		ptrEqual(d.Locality, o.Locality) && d.Proxy == o.Proxy
}

func ptrEqual[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// Clone copies d's maps, lists and pointers.
func (d ServiceDetails) Clone() ServiceDetails {
	d.TaggedAddresses = maps.Clone(d.TaggedAddresses)
	d.Ports = slices.Clone(d.Ports)
	if d.Weights != nil {
		w := *d.Weights
		d.Weights = &w
	}
	if d.Locality != nil {
		l := *d.Locality
		d.Locality = &l
	}
	return d
}

// ServiceCheck names a service check a session binds (Consul 1.7+). It is
// bound by its check ID on the session's node, like a node check (S56).
type ServiceCheck struct {
	ID        string
	Namespace string
}

// Session binds a node and some of its checks to the locks and prepared
// queries it holds. Sessions are immutable once created (S1).
//
// The three check lists are kept as created, because Consul returns each
// as it was stored; the session is bound to their union (CheckIDs, S56).
// An empty union means bound to the node only (S7).
type Session struct {
	ID   string
	Name string
	Node string
	// Checks is the legacy (before Consul 1.7) list, as left by
	// FixupSessionChecks: nil in the default case.
	Checks        []string
	NodeChecks    []string
	ServiceChecks []ServiceCheck
	LockDelay     time.Duration
	Behavior      Behavior
	// TTL is kept as submitted ("30s", or "" for none) because Consul echoes it verbatim.
	TTL         string
	CreateIndex uint64
	ModifyIndex uint64
}

// CheckIDs is the set of checks the session is bound to: Checks, then
// NodeChecks, then the ServiceChecks' IDs, each ID once (S56).
func (s Session) CheckIDs() []string {
	return checkUnion(s.Checks, s.NodeChecks, s.ServiceChecks)
}

func checkUnion(checks, nodeChecks []string, serviceChecks []ServiceCheck) []string {
	var out []string
	add := func(id string) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, id := range checks {
		add(id)
	}
	for _, id := range nodeChecks {
		add(id)
	}
	for _, sc := range serviceChecks {
		add(sc.ID)
	}
	return out
}

// FixupSessionChecks is what Consul's session-create endpoint does to the
// two plain check lists after decoding the body over the defaults
// (Checks = NodeChecks = ["serfHealth"]), before the create is proposed
// (S56, S7):
//   - Checks empty: NodeChecks is emptied too, so nothing but the
//     ServiceChecks is bound;
//   - Checks exactly ["serfHealth"]: Checks is dropped and NodeChecks decides;
//   - NodeChecks empty: Checks is dropped;
//   - otherwise both are kept.
//
// The returned Checks is the legacy field as sessions show it afterwards.
func FixupSessionChecks(checks, nodeChecks []string) (legacy, node []string) {
	switch {
	case len(checks) == 0:
		return nil, nil
	case len(checks) == 1 && checks[0] == SerfHealthCheckID:
		return nil, slices.Clone(nodeChecks)
	case len(nodeChecks) == 0:
		return nil, nil
	}
	return slices.Clone(checks), slices.Clone(nodeChecks)
}

// TTLDuration is the parsed TTL; 0 means the session has none. Create
// validated it, so the parse cannot fail for a stored session.
func (s Session) TTLDuration() time.Duration {
	if s.TTL == "" {
		return 0
	}
	d, err := time.ParseDuration(s.TTL)
	if err != nil {
		return 0
	}
	return d
}

// EffectiveLockDelay is the delay an invalidation arms: LockDelay capped at 60 s (S5, S22).
func (s Session) EffectiveLockDelay() time.Duration {
	return min(max(s.LockDelay, 0), MaxLockDelay)
}

// KVEntry is one key. LockIndex counts the acquisitions that changed the
// holder; with Session it forms the key's current sequencer (S40).
type KVEntry struct {
	Key         string
	Value       []byte
	Flags       uint64
	LockIndex   uint64
	Session     string
	CreateIndex uint64
	ModifyIndex uint64
}

// Sequencer names one tenure of a lock (S40, S41).
type Sequencer struct {
	Key       string
	LockIndex uint64
	Session   string
}

// Sequencer returns the entry's current sequencer; Session is "" when unheld.
func (e KVEntry) Sequencer() Sequencer {
	return Sequencer{Key: e.Key, LockIndex: e.LockIndex, Session: e.Session}
}

// LockDelay is a key whose lock-delay an invalidation armed (S22).
type LockDelay struct {
	Key   string
	Delay time.Duration
}

// PreparedQuery is a stored prepared query: the fields of Consul's
// definition that tenure keeps (templates are not supported). A query with
// a Session is deleted when that session is invalidated (S58).
type PreparedQuery struct {
	ID      string
	Name    string `json:",omitempty"`
	Session string `json:",omitempty"`
	// Token is stored as given; the model does not check it (no ACLs).
	Token string `json:",omitempty"`
	// Template, when its Type is set, makes the query a template (S83):
	// it answers every name its Name prefixes, rendered for that name.
	Template    QueryTemplate `json:",omitempty"`
	Service     ServiceQuery
	DNS         QueryDNS
	CreateIndex uint64
	ModifyIndex uint64
}

// QueryTemplateNamePrefixMatch is the one template type Consul has.
const QueryTemplateNamePrefixMatch = "name_prefix_match"

// QueryTemplate is a prepared query's template settings (S83). The
// rendering of a template's fields happens outside the model; the model
// stores and resolves templates.
type QueryTemplate struct {
	Type string `json:",omitempty"`
	// Regexp is matched against the name a template is resolved for; its
	// groups are what the template's match(N) interpolates.
	Regexp string `json:",omitempty"`
	// RemoveEmptyTags drops the tags that render empty.
	RemoveEmptyTags bool `json:",omitempty"`
}

// IsTemplate reports whether q is a template.
func (q PreparedQuery) IsTemplate() bool { return q.Template.Type != "" }

// ServiceQuery says which service instances a query returns (S59).
type ServiceQuery struct {
	Service  string
	Failover QueryFailover
	// OnlyPassing drops instances with a warning check too; critical ones
	// are always dropped.
	OnlyPassing bool
	// IgnoreCheckIDs are checks whose status the health filter skips.
	IgnoreCheckIDs []string `json:",omitempty"`
	// Near is kept for the HTTP layer, which sorts by it; the model does not.
	Near string `json:",omitempty"`
	// Tags must all be present on an instance, except those written "!tag",
	// which must be absent; case-insensitive.
	Tags        []string          `json:",omitempty"`
	NodeMeta    map[string]string `json:",omitempty"`
	ServiceMeta map[string]string `json:",omitempty"`
}

// QueryFailover is stored for round trips; with one datacenter it never
// applies.
type QueryFailover struct {
	NearestN    int           `json:",omitempty"`
	Datacenters []string      `json:",omitempty"`
	Targets     []QueryTarget `json:",omitempty"`
}

// QueryTarget is one failover target.
type QueryTarget struct {
	Peer       string `json:",omitempty"`
	Datacenter string `json:",omitempty"`
}

// QueryDNS holds a query's DNS options.
type QueryDNS struct {
	TTL string `json:",omitempty"`
}
