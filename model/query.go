package model

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// RedactedToken is what Consul shows in place of a query's token to callers
// that may not read it; a definition carrying it back is refused (S57).
const RedactedToken = "<hidden>"

// query applies a prepared-query write (S57). Request checks come first
// (Consul's parseQuery), then the state checks (its state store).
func (a *applier) query(op QueryOp) {
	q := op.Query
	if q.ID == "" {
		a.fail(errorf(ErrInvalid, "Must provide ID"))
		return
	}
	prev, exists := a.s.queries[q.ID]
	switch op.Op {
	case QueryCreate:
		if exists {
			a.fail(errorf(ErrInternal, "Prepared query ID '%s' already exists", q.ID))
			return
		}
	case QueryUpdate, QueryDelete:
		if !exists {
			a.fail(errorf(ErrMissing, "Cannot modify non-existent prepared query: '%s'", q.ID))
			return
		}
	default:
		a.fail(errorf(ErrInvalid, "Unknown prepared query operation: %s", op.Op))
		return
	}
	if op.Op == QueryDelete {
		delete(a.s.queries, q.ID)
		a.s.tables.Queries = a.idx
		a.res.QueryID = q.ID
		return
	}
	if err := ValidateQuery(q); err != nil {
		a.fail(err)
		return
	}
	if err := a.checkQueryState(q); err != nil {
		a.fail(err)
		return
	}
	q.CreateIndex, q.ModifyIndex = a.idx, a.idx
	if exists {
		q.CreateIndex = prev.CreateIndex
	}
	a.s.queries[q.ID] = cloneQuery(q)
	a.s.tables.Queries = a.idx
	a.res.QueryID = q.ID
}

// ValidateQuery checks a definition on its own, as Consul does before raft;
// the texts are Consul's (S57). A query with no Name must name a Session
// or be a template (S83).
func ValidateQuery(q PreparedQuery) *Error {
	bad := func(format string, args ...any) *Error {
		return errorf(ErrInvalid, "Invalid prepared query: "+format, args...)
	}
	sv := q.Service
	switch {
	case q.Name == "" && q.Session == "" && !q.IsTemplate():
		return bad("Must be bound to a session")
	case q.Token == RedactedToken:
		return bad("Bad Token '%s', it looks like a query definition with a redacted token was submitted", q.Token)
	case sv.Service == "":
		return bad("Must provide a Service name to query")
	case sv.Failover.NearestN < 0:
		return bad("Bad NearestN '%d', must be >= 0", sv.Failover.NearestN)
	case (sv.Failover.NearestN != 0 || len(sv.Failover.Datacenters) != 0) && len(sv.Failover.Targets) != 0:
		return bad("Targets cannot be populated with NearestN or Datacenters")
	}
	if q.DNS.TTL != "" {
		ttl, err := time.ParseDuration(q.DNS.TTL)
		if err != nil {
			return bad("Bad DNS TTL '%s': %v", q.DNS.TTL, err)
		}
		if ttl < 0 {
			return bad("DNS TTL '%d', must be >=0", ttl)
		}
	}
	return nil
}

// checkQueryState applies the state store's checks, in its order: the name
// is nobody else's (names compare case-insensitively), or for a template
// without one no other template lacks one (S83), the name is no query's
// ID, the session exists (S57), and a template's type and regexp are
// good (S83).
func (a *applier) checkQueryState(q PreparedQuery) *Error {
	if q.Name == "" && q.IsTemplate() {
		for _, other := range a.s.queries {
			if other.ID != q.ID && other.Name == "" && other.IsTemplate() {
				return errorf(ErrConflict, "a query template with an empty name already exists")
			}
		}
	}
	if q.Name != "" {
		for _, other := range a.s.queries {
			if other.ID != q.ID && strings.EqualFold(other.Name, q.Name) {
				return errorf(ErrConflict, "name '%s' aliases an existing query name", q.Name)
			}
		}
		for id := range a.s.queries {
			if strings.EqualFold(id, q.Name) {
				return errorf(ErrConflict, "name '%s' aliases an existing query ID", q.Name)
			}
		}
	}
	if q.Session != "" {
		if _, ok := a.s.sessions[q.Session]; !ok {
			return errorf(ErrMissing, "invalid session %q", q.Session)
		}
	}
	if q.IsTemplate() {
		return CheckTemplate(q.Template)
	}
	return nil
}

// CheckTemplate checks what the model knows of a template: its type and
// its regexp, with Consul's texts (S83). The fields' interpolations are
// parsed and tried where they are rendered, outside the model.
func CheckTemplate(t QueryTemplate) *Error {
	if t.Type != QueryTemplateNamePrefixMatch {
		return errorf(ErrInvalid, "failed compiling template: Bad Template.Type '%s'", t.Type)
	}
	if t.Regexp != "" {
		if _, err := regexp.Compile(t.Regexp); err != nil {
			return errorf(ErrInvalid, "failed compiling template: Bad Regexp: %v", err)
		}
	}
	return nil
}

// cloneQuery copies the lists and maps, so the stored query shares nothing
// with the command.
func cloneQuery(q PreparedQuery) PreparedQuery {
	sv := &q.Service
	sv.Failover.Datacenters = slices.Clone(sv.Failover.Datacenters)
	sv.Failover.Targets = slices.Clone(sv.Failover.Targets)
	sv.IgnoreCheckIDs = slices.Clone(sv.IgnoreCheckIDs)
	sv.Tags = slices.Clone(sv.Tags)
	sv.NodeMeta = maps.Clone(sv.NodeMeta)
	sv.ServiceMeta = maps.Clone(sv.ServiceMeta)
	return q
}

// Query returns a prepared query by ID.
func (s *State) Query(id string) (PreparedQuery, bool) {
	q, ok := s.queries[id]
	return q, ok
}

// QueryList returns every prepared query, sorted by ID.
func (s *State) QueryList() []PreparedQuery {
	out := make([]PreparedQuery, 0, len(s.queries))
	for _, id := range sortedKeys(s.queries) {
		out = append(out, s.queries[id])
	}
	return out
}

// ResolveQuery finds the query an execute or explain names, as Consul
// does: by ID first, then by name, case-insensitively (S59), then the
// template whose name is the longest prefix of idOrName, case-insensitively
// (S83; a template with no name prefixes every name). A template comes back
// as stored, for the caller to render for idOrName; one named by its ID is
// the caller's to refuse (TemplateByID).
func (s *State) ResolveQuery(idOrName string) (PreparedQuery, bool) {
	if q, ok := s.QueryNamed(idOrName); ok || idOrName == "" {
		return q, ok
	}
	lower := strings.ToLower(idOrName)
	var best PreparedQuery
	found := false
	for _, q := range s.QueryList() {
		if q.IsTemplate() && strings.HasPrefix(lower, strings.ToLower(q.Name)) && (!found || len(q.Name) > len(best.Name)) {
			best, found = q, true
		}
	}
	return best, found
}

// QueryNamed is the query whose ID, or else whose name, is idOrName,
// case-insensitively: ResolveQuery without templates, which also says
// whether a new query's ID would hide another query.
func (s *State) QueryNamed(idOrName string) (PreparedQuery, bool) {
	if idOrName == "" {
		return PreparedQuery{}, false
	}
	if q, ok := s.queries[idOrName]; ok {
		return q, true
	}
	for _, q := range s.QueryList() {
		if strings.EqualFold(q.ID, idOrName) || (q.Name != "" && strings.EqualFold(q.Name, idOrName)) {
			return q, true
		}
	}
	return PreparedQuery{}, false
}

// TemplateByID reports whether q, which ResolveQuery found for idOrName,
// is a template named by its ID, which Consul refuses to resolve.
func TemplateByID(q PreparedQuery, idOrName string) bool {
	return q.IsTemplate() && strings.EqualFold(q.ID, idOrName)
}

// ExecuteQuery returns the instances q selects, sorted by node then service
// ID (S59): the instances of q.Service.Service, then the tag and meta
// filters, then the health filter. Shuffling, Near sorting and Limit are
// the caller's: they are not part of the state.
func (s *State) ExecuteQuery(q PreparedQuery) []ServiceInstance {
	var out []ServiceInstance
	for _, in := range s.ServiceInstances(q.Service.Service) {
		if !tagsMatch(q.Service.Tags, in.Service.Tags) ||
			!metaMatch(q.Service.NodeMeta, in.Node.Meta) ||
			!metaMatch(q.Service.ServiceMeta, in.Service.Meta) ||
			!healthy(in.Checks, q.Service.OnlyPassing, q.Service.IgnoreCheckIDs) {
			continue
		}
		out = append(out, in)
	}
	return out
}

// tagsMatch: every wanted tag is present and every "!tag" absent, ignoring case.
func tagsMatch(want, have []string) bool {
	index := map[string]bool{}
	for _, t := range have {
		index[strings.ToLower(t)] = true
	}
	for _, t := range want {
		t = strings.ToLower(t)
		if neg, ok := strings.CutPrefix(t, "!"); ok {
			if index[neg] {
				return false
			}
		} else if !index[t] {
			return false
		}
	}
	return true
}

// metaMatch: every wanted key has the wanted value.
func metaMatch(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// healthy is Consul's query health filter: any critical check drops the
// instance, and so does a warning one with onlyPassing; ignored checks do
// not count.
func healthy(checks []Check, onlyPassing bool, ignore []string) bool {
	for _, c := range checks {
		if slices.Contains(ignore, c.CheckID) {
			continue
		}
		if c.Status == HealthCritical || (onlyPassing && c.Status == HealthWarning) {
			return false
		}
	}
	return true
}
