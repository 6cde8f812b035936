package local

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Catalog is what anti-entropy needs from the servers: reads of the node's
// own entries for a full sync, and writes. Each write is one raft entry on
// the leader, which is why the Syncer counts and coalesces them.
type Catalog interface {
	// Register writes svc (when non-nil) and checks for node in one write
	// made with token (SyncConfig.RegisterToken); the node itself is
	// created if missing. Entries are replaced whole.
	Register(node string, svc *Service, checks []Check, token string) error
	// DeregisterService deletes a service and its checks in one write.
	DeregisterService(node, serviceID string) error
	// DeregisterCheck deletes one check in one write.
	DeregisterCheck(node, checkID string) error
	// NodeServices and NodeChecks read the node's catalog entries.
	NodeServices(node string) ([]Service, error)
	NodeChecks(node string) ([]Check, error)
}

// ErrNotFound marks a deregistration of something the catalog does not
// have; the Syncer counts it as done, as Consul's agent does with "Unknown
// service"/"Unknown check".
var ErrNotFound = errors.New("not found")

// ErrPermissionDenied marks a write the catalog refused for ACLs; like
// Consul, the Syncer then leaves the entry alone until the next full sync
// rather than retrying it on every change.
var ErrPermissionDenied = errors.New("Permission denied") //lint:ignore ST1005 Consul's word, matched by callers

// MemCatalog is an in-memory Catalog for tests: it counts writes, can be
// made to fail, and can be edited behind the agent's back to model drift.
type MemCatalog struct {
	mu       sync.Mutex
	services map[string]map[string]Service // node → ID → service
	checks   map[string]map[string]Check   // node → ID → check
	records  map[string]NodeInfo           // node → its record, once one was written
	writes   int
	reads    int
	failWith error // returned by every call while set
	// tokens is the token of the last register that wrote each entry,
	// keyed "service:<id>" and "check:<id>", for tests to read.
	tokens map[string]string
	// allow, when set, decides each register by its token; a refusal is
	// ErrPermissionDenied and writes nothing, as the catalog's ACLs refuse.
	allow func(token string, svc *Service, checks []Check) bool
}

// NewMemCatalog returns an empty catalog.
func NewMemCatalog() *MemCatalog {
	return &MemCatalog{services: map[string]map[string]Service{}, checks: map[string]map[string]Check{},
		records: map[string]NodeInfo{}, tokens: map[string]string{}}
}

// requireTokens makes every later register pass allow, as a catalog with
// ACLs on does.
func (m *MemCatalog) requireTokens(allow func(token string, svc *Service, checks []Check) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.allow = allow
}

// tokenOf is the token of the last register that wrote an entry: kind is
// "service" or "check"; "" and false when none did.
func (m *MemCatalog) tokenOf(kind, id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[kind+":"+id]
	return t, ok
}

// Writes is the number of successful writes so far.
func (m *MemCatalog) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// readCount is the number of reads so far.
func (m *MemCatalog) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// fail makes every call return err until fail(nil).
func (m *MemCatalog) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failWith = err
}

func (m *MemCatalog) node(node string) (map[string]Service, map[string]Check) {
	if m.services[node] == nil {
		m.services[node] = map[string]Service{}
		m.checks[node] = map[string]Check{}
	}
	return m.services[node], m.checks[node]
}

// Register implements Catalog. A check naming a service the node does not
// have (after this write) is refused, as the catalog refuses it.
func (m *MemCatalog) Register(node string, svc *Service, checks []Check, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return m.failWith
	}
	if m.allow != nil && !m.allow(token, svc, checks) {
		return fmt.Errorf("register for node %q: %w", node, ErrPermissionDenied)
	}
	svcs, chks := m.node(node)
	for _, c := range checks {
		if c.ServiceID == "" {
			continue
		}
		if _, ok := svcs[c.ServiceID]; !ok && (svc == nil || svc.ID != c.ServiceID) {
			return fmt.Errorf("register check %q: unknown service ID %q", c.CheckID, c.ServiceID)
		}
	}
	if svc != nil {
		svcs[svc.ID] = svc.clone()
		m.tokens["service:"+svc.ID] = token
	}
	for _, c := range checks {
		c = c.clone()
		c.Node = node
		chks[c.CheckID] = c
		m.tokens["check:"+c.CheckID] = token
	}
	m.writes++
	return nil
}

// DeregisterService implements Catalog.
func (m *MemCatalog) DeregisterService(node, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return m.failWith
	}
	svcs, chks := m.node(node)
	if _, ok := svcs[id]; !ok {
		return fmt.Errorf("deregister service %q: %w", id, ErrNotFound)
	}
	delete(svcs, id)
	for cid, c := range chks {
		if c.ServiceID == id {
			delete(chks, cid)
		}
	}
	m.writes++
	return nil
}

// DeregisterCheck implements Catalog.
func (m *MemCatalog) DeregisterCheck(node, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return m.failWith
	}
	_, chks := m.node(node)
	if _, ok := chks[id]; !ok {
		return fmt.Errorf("deregister check %q: %w", id, ErrNotFound)
	}
	delete(chks, id)
	m.writes++
	return nil
}

// NodeServices implements Catalog; the result is sorted by ID.
func (m *MemCatalog) NodeServices(node string) ([]Service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return nil, m.failWith
	}
	m.reads++
	return m.servicesLocked(node), nil
}

// servicesLocked lists node's services sorted by ID; m.mu is held.
func (m *MemCatalog) servicesLocked(node string) []Service {
	out := make([]Service, 0, len(m.services[node]))
	for _, s := range m.services[node] {
		out = append(out, s.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// NodeChecks implements Catalog; the result is sorted by ID.
func (m *MemCatalog) NodeChecks(node string) ([]Check, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return nil, m.failWith
	}
	m.reads++
	out := make([]Check, 0, len(m.checks[node]))
	for _, c := range m.checks[node] {
		out = append(out, c.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CheckID < out[j].CheckID })
	return out, nil
}

// NodeAndServices implements NodeCatalog, as one read. A node that only a
// service or check write created has an empty record, as a catalog node
// registered bare has.
func (m *MemCatalog) NodeAndServices(node string) (NodeInfo, bool, []Service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return NodeInfo{}, false, nil, m.failWith
	}
	m.reads++
	if _, ok := m.services[node]; !ok {
		return NodeInfo{}, false, []Service{}, nil
	}
	return m.records[node].clone(), true, m.servicesLocked(node), nil
}

// RegisterNode implements NodeCatalog.
func (m *MemCatalog) RegisterNode(node string, info NodeInfo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return m.failWith
	}
	m.node(node)
	m.records[node] = info.clone()
	m.writes++
	return nil
}

// record is node's record and whether the node exists, for tests to
// inspect; it is not counted as a read.
func (m *MemCatalog) record(node string) (NodeInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.services[node]
	return m.records[node].clone(), ok
}

// putNode rewrites node's record behind the agent's back, without counting
// a write: drift, as an operator's /v1/catalog/register would cause.
func (m *MemCatalog) putNode(node string, info NodeInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.node(node)
	m.records[node] = info.clone()
}

// put writes a service or a check straight into the catalog without
// counting a write: drift, as a /v1/catalog/register call would cause.
func (m *MemCatalog) put(node string, svc *Service, check *Check) {
	m.mu.Lock()
	defer m.mu.Unlock()
	svcs, chks := m.node(node)
	if svc != nil {
		svcs[svc.ID] = svc.clone()
	}
	if check != nil {
		c := check.clone()
		c.Node = node
		chks[c.CheckID] = c
	}
}

// drop deletes a service (with its checks) or a check behind the agent's
// back, without counting a write.
func (m *MemCatalog) drop(node, serviceID, checkID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	svcs, chks := m.node(node)
	if serviceID != "" {
		delete(svcs, serviceID)
		for id, c := range chks {
			if c.ServiceID == serviceID {
				delete(chks, id)
			}
		}
	}
	delete(chks, checkID)
}

// Dump renders the node's catalog entries one per line, sorted, for
// comparisons in tests.
func (m *MemCatalog) Dump(node string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for _, s := range m.services[node] {
		lines = append(lines, fmt.Sprintf("service %s %s tags=%v %s:%d", s.ID, s.Service, s.Tags, s.Address, s.Port))
	}
	for _, c := range m.checks[node] {
		lines = append(lines, fmt.Sprintf("check %s svc=%s %s %q", c.CheckID, c.ServiceID, c.Status, c.Output))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
