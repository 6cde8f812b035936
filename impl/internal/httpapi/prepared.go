package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenurekv/tenure/model"
)

// Prepared queries (S57-S59): /v1/query creates and lists,
// /v1/query/<id> reads, replaces and deletes, and
// /v1/query/<id or name>/execute and /explain run one. The leader chooses a
// new query's ID (leader.Core), as it does a session's.

// queryBody is structs.PreparedQuery as a client sends it. Unknown fields
// are ignored.
type queryBody struct {
	ID       string
	Name     string
	Session  string
	Token    string
	Service  serviceQueryBody
	Template struct {
		Type            string
		Regexp          string
		RemoveEmptyTags bool
	}
	DNS model.QueryDNS
}

type serviceQueryBody struct {
	Service        string
	Failover       model.QueryFailover
	OnlyPassing    bool
	IgnoreCheckIDs []string
	Near           string
	Tags           []string
	NodeMeta       map[string]string
	ServiceMeta    map[string]string
}

// decodeQuery reads a definition: 400 for a body that is not one, 413 over
// the limits. An empty body is an empty definition, which the validation
// then refuses, as in Consul.
func decodeQuery(body []byte) (queryBody, error) {
	var b queryBody
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &b); err != nil {
			return b, errorf(http.StatusBadRequest, "Request decode failed: %v", err)
		}
	}
	if err := queryLimits(b); err != nil {
		return b, err
	}
	return b, nil
}

// queryLimits bounds every name and list of a definition.
func queryLimits(b queryBody) error {
	sv := b.Service
	for _, f := range []struct{ what, value string }{
		{"Query ID", b.ID}, {"Query name", b.Name}, {"Query session", b.Session}, {"Query token", b.Token},
		{"Query service", sv.Service}, {"Query near", sv.Near}, {"Query DNS TTL", b.DNS.TTL},
		{"Query template type", b.Template.Type}, {"Query template regexp", b.Template.Regexp},
	} {
		if err := checkLen(f.what, f.value, maxNameLen); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		what string
		list []string
	}{{"Query tag", sv.Tags}, {"Query ignored check", sv.IgnoreCheckIDs}, {"Query failover datacenter", sv.Failover.Datacenters}} {
		if err := tagLimits(l.what, l.list); err != nil {
			return err
		}
	}
	if n := len(sv.Failover.Targets); n > maxTags {
		return tooMany("Query failover targets", n, maxTags)
	}
	for _, tg := range sv.Failover.Targets {
		if err := checkLen("Query failover target", tg.Peer+tg.Datacenter, maxNameLen); err != nil {
			return err
		}
	}
	if err := metaLimits("Query node meta", sv.NodeMeta, maxNodeMeta); err != nil {
		return err
	}
	return metaLimits("Query service meta", sv.ServiceMeta, maxTags)
}

func (b queryBody) toModel() model.PreparedQuery {
	sv := b.Service
	return model.PreparedQuery{ID: b.ID, Name: b.Name, Session: b.Session, Token: b.Token, DNS: b.DNS,
		Template: model.QueryTemplate(b.Template),
		Service: model.ServiceQuery{Service: sv.Service, Failover: sv.Failover, OnlyPassing: sv.OnlyPassing,
			IgnoreCheckIDs: sv.IgnoreCheckIDs, Near: sv.Near, Tags: sv.Tags, NodeMeta: sv.NodeMeta, ServiceMeta: sv.ServiceMeta}}
}

// queryList is /v1/query: POST creates ({"ID":…}), GET lists.
func (h *handler) queryList(c *call) error {
	if c.r.Method == get {
		q, err := parseQuery(c.query())
		if err != nil {
			return err
		}
		return h.serveRead(c, q, func(s *model.State) view {
			a, err := h.authz(c, s)
			if err != nil {
				return view{fail: err}
			}
			out, filtered := readableQueries(a, s.QueryList()) // S90
			return view{index: s.Tables().Queries, body: out, filtered: filtered}
		})
	}
	body, err := readBody(c, maxQueryBody, bodyOver(maxQueryBody))
	if err != nil {
		return err
	}
	b, err := decodeQuery(body)
	if err != nil {
		return err
	}
	if b.ID != "" {
		return h.rejection(&model.Error{Kind: model.ErrInvalid, Msg: "ID must be empty when creating a new prepared query"})
	}
	pq := b.toModel()
	op := model.QueryOp{Op: model.QueryCreate, Query: pq}
	// Consul decides the token before it checks the definition (S90).
	if err := h.vetQuery(c, op); err != nil {
		return err
	}
	// The definition is checked before raft, so a bad one costs no index;
	// the state checks (name, session) run in the apply (S57).
	if err := h.validateQuery(pq); err != nil {
		return err
	}
	res, err := h.queryWrite(c, body, op)
	if err != nil || res == nil {
		return err
	}
	return writeJSON(c, http.StatusOK, struct{ ID string }{res.QueryID})
}

// validateQuery checks a definition before raft: the model's checks, and
// for a template its fields' interpolations, which only the HTTP layer
// parses (S83).
func (h *handler) validateQuery(pq model.PreparedQuery) error {
	if me := model.ValidateQuery(pq); me != nil {
		return h.rejection(me)
	}
	if pq.IsTemplate() {
		if _, err := compileTemplate(pq); err != nil {
			return h.rejection(&model.Error{Kind: model.ErrInvalid, Msg: err.Error()})
		}
	}
	return nil
}

// resolveQuery is the query an execute or explain runs: the one idOrName
// names, a template rendered for idOrName (S83). A template named by its
// ID, or one that does not render, answers Consul's 500.
func resolveQuery(s *model.State, idOrName string) (model.PreparedQuery, error) {
	pq, ok := s.ResolveQuery(idOrName)
	switch {
	case !ok:
		return pq, errorf(http.StatusNotFound, "Query not found")
	case model.TemplateByID(pq, idOrName):
		return pq, errorf(http.StatusInternalServerError, "prepared query templates can only be resolved up by name, not by ID")
	case !pq.IsTemplate():
		return pq, nil
	}
	ct, err := compileTemplate(pq)
	if err == nil {
		pq, err = ct.render(idOrName, "")
	}
	if err != nil {
		return pq, errorf(http.StatusInternalServerError, "%s", oneLine(err.Error()))
	}
	return pq, nil
}

// queryWrite proposes op on the leader (forwarding from a follower, in which
// case it answers nil, nil) and maps a refusal to its answer.
func (h *handler) queryWrite(c *call, body []byte, op model.QueryOp) (*model.Result, error) {
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return nil, err
	}
	if err := h.vetQuery(c, op); err != nil {
		return nil, err // S90, decided again on the leader's state
	}
	res, err := h.b.Apply(c.r.Context(), model.Command{Query: &op})
	if err != nil {
		return nil, h.applyFailure(err)
	}
	if res.Err != nil {
		return nil, h.rejection(res.Err)
	}
	return &res, nil
}

// querySpecific is /v1/query/<id> (GET, PUT, DELETE) and
// /v1/query/<id or name>/execute and /explain (GET).
func (h *handler) querySpecific(c *call) error {
	id, verb, _ := strings.Cut(c.arg, "/")
	if err := checkLen("Query ID", id, maxNameLen); err != nil {
		return err
	}
	switch verb {
	case "execute", "explain":
		if c.r.Method != get {
			return &apiError{status: http.StatusMethodNotAllowed, msg: "method " + c.r.Method + " not allowed",
				allow: []string{http.MethodOptions, get}}
		}
		if verb == "execute" {
			return h.queryExecute(c, id)
		}
		return h.queryExplain(c, id)
	case "":
	default:
		return errorf(http.StatusNotFound, "Query not found")
	}
	if id == "" {
		return errorf(http.StatusBadRequest, "Missing query ID")
	}
	switch c.r.Method {
	case put:
		return h.queryUpdate(c, id)
	case del:
		if _, err := h.queryWrite(c, nil, model.QueryOp{Op: model.QueryDelete, Query: model.PreparedQuery{ID: id}}); err != nil {
			return err
		}
		return nil // 200, empty body, as Consul answers (also when forwarded)
	}
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		pq, ok := s.Query(id)
		if !ok {
			return view{index: s.Tables().Queries, fail: errorf(http.StatusNotFound, "Query not found")}
		}
		a, err := h.authz(c, s)
		if err == nil {
			err = queryReadable(a, pq, true) // S90
		}
		if err != nil {
			return view{index: s.Tables().Queries, fail: err}
		}
		return view{index: s.Tables().Queries, body: []queryJSON{queryShown(a, pq)}}
	})
}

// queryUpdate is PUT /v1/query/<id>: the body replaces the whole
// definition, and the ID is the URL's.
func (h *handler) queryUpdate(c *call, id string) error {
	body, err := readBody(c, maxQueryBody, bodyOver(maxQueryBody))
	if err != nil {
		return err
	}
	b, err := decodeQuery(body)
	if err != nil {
		return err
	}
	pq := b.toModel()
	pq.ID = id
	op := model.QueryOp{Op: model.QueryUpdate, Query: pq}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	// Consul decides the token before it looks the query up (S90).
	if err := h.vetQuery(c, op); err != nil {
		return err
	}
	// Consul looks the query up before it checks the definition; the apply
	// repeats both checks against the state it writes.
	var exists bool
	h.b.Read(func(s *model.State) { _, exists = s.Query(id) })
	if exists {
		if err := h.validateQuery(pq); err != nil {
			return err
		}
	}
	_, err = h.queryWrite(c, body, op)
	return err
}

// queryExecute is GET /v1/query/<id or name>/execute[?limit=n]: the
// healthy instances, shuffled as Consul shuffles them (the model returns
// them sorted), sorted by distance from ?near or else the query's Near
// (S59, S89), then cut to ?limit.
func (h *handler) queryExecute(c *call, idOrName string) error {
	v := c.query()
	q, err := parseQuery(v)
	if err != nil {
		return err
	}
	limit := 0
	if l := v.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 0 {
			return errorf(http.StatusBadRequest, "Bad limit: %q", l)
		}
	}
	q.index = 0 // execute does not block (CONSUL.md §14)
	meta := h.queryMeta(q)
	return h.serveRead(c, q, func(s *model.State) view {
		pq, err := resolveQuery(s, idOrName)
		if err != nil {
			return view{index: s.Tables().Queries, fail: err}
		}
		a, tell, err := h.executeAuthz(c, s, pq)
		if err != nil {
			return view{index: s.Tables().Queries, fail: err}
		}
		nodes := []healthEntryJSON{}
		filtered := false
		for _, in := range s.ExecuteQuery(pq) {
			if !instanceReadable(a, in.Node.Name, in.Service.Service) {
				filtered = true // S90
				continue
			}
			nodes = append(nodes, h.toHealthEntry(s, in))
		}
		h.order.shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		near := v.Get("near")
		if near == "" {
			near = pq.Service.Near
		}
		if source := h.queryNear(c, s, near); source != "" {
			nodeOf := func(e healthEntryJSON) string { return e.Node.Node }
			sortNear(s, source, nodes, nodeOf)
			frontNode(nodes, source, nodeOf)
		}
		if limit > 0 && len(nodes) > limit {
			nodes = nodes[:limit]
		}
		index := max(s.Tables().Queries, s.Tables().Nodes, s.Tables().Services, s.Tables().Checks)
		m := meta.at(index)
		// Told by the token the query ran with, not the caller's.
		m.ResultsFilteredByACLs = filtered && tell
		return view{index: index, body: executeJSON{Service: pq.Service.Service, Nodes: nodes,
			DNS: dnsJSON(pq.DNS), Datacenter: h.opts.Datacenter, queryMetaJSON: m},
			filtered: filtered && tell, unmasked: true}
	})
}

// queryExplain is GET /v1/query/<id or name>/explain: {"Query": …}.
func (h *handler) queryExplain(c *call, idOrName string) error {
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	q.index = 0
	meta := h.queryMeta(q)
	return h.serveRead(c, q, func(s *model.State) view {
		pq, err := resolveQuery(s, idOrName)
		if err != nil {
			return view{index: s.Tables().Queries, fail: err}
		}
		a, err := h.authz(c, s)
		if err == nil {
			err = queryReadable(a, pq, false) // S90
		}
		if err != nil {
			return view{index: s.Tables().Queries, fail: err}
		}
		return view{index: s.Tables().Queries, body: struct {
			Query queryJSON
			queryMetaJSON
		}{queryShown(a, pq), meta.at(s.Tables().Queries)}}
	})
}

// executeJSON is structs.PreparedQueryExecuteResponse.
type executeJSON struct {
	Service    string
	Nodes      []healthEntryJSON
	DNS        dnsJSON
	Datacenter string
	PeerName   string
	Failovers  int
	queryMetaJSON
}

// queryMetaJSON is structs.QueryMeta, which Consul's execute and explain
// answers embed.
type queryMetaJSON struct {
	Index                 uint64
	LastContact           time.Duration
	KnownLeader           bool
	ConsistencyLevel      string
	NotModified           bool
	Backend               int
	ResultsFilteredByACLs bool
}

// queryMeta is taken before the read: Backend.Leader may read the state
// itself, which must not happen under Backend.Read. The read sets Index.
func (h *handler) queryMeta(q queryOpts) queryMetaJSON {
	isLeader, _, known := h.b.Leader()
	return queryMetaJSON{LastContact: max(h.b.LastContact(), 0),
		KnownLeader: isLeader || known, ConsistencyLevel: q.mode.String()}
}

func (m queryMetaJSON) at(index uint64) queryMetaJSON {
	m.Index = max(index, 1)
	return m
}

// dnsJSON is structs.QueryDNSOptions: TTL shown even when empty.
type dnsJSON struct{ TTL string }

// queryJSON is structs.PreparedQuery as Consul shows it; the token is
// shown as stored only to a caller with acl:write (queryShown).
type queryJSON struct {
	ID          string
	Name        string
	Session     string
	Token       string
	Template    templateJSON
	Service     serviceQueryJSON
	DNS         dnsJSON
	CreateIndex uint64
	ModifyIndex uint64
}

// templateJSON is structs.QueryTemplateOptions, shown even when empty.
type templateJSON struct {
	Type            string
	Regexp          string
	RemoveEmptyTags bool
}

type serviceQueryJSON struct {
	Service        string
	SamenessGroup  string
	Failover       failoverJSON
	OnlyPassing    bool
	IgnoreCheckIDs []string
	Near           string
	Tags           []string
	NodeMeta       map[string]string
	ServiceMeta    map[string]string
	Connect        bool
	Peer           string
}

type failoverJSON struct {
	NearestN    int
	Datacenters []string
	Targets     []model.QueryTarget
}

func toQuery(q model.PreparedQuery) queryJSON {
	sv := q.Service
	out := queryJSON{ID: q.ID, Name: q.Name, Session: q.Session, Token: q.Token, DNS: dnsJSON(q.DNS),
		Template: templateJSON(q.Template),
		Service: serviceQueryJSON{Service: sv.Service, OnlyPassing: sv.OnlyPassing, IgnoreCheckIDs: sv.IgnoreCheckIDs,
			Near: sv.Near, Tags: sv.Tags, NodeMeta: sv.NodeMeta, ServiceMeta: sv.ServiceMeta,
			Failover: failoverJSON{NearestN: sv.Failover.NearestN, Datacenters: sv.Failover.Datacenters, Targets: sv.Failover.Targets}},
		CreateIndex: q.CreateIndex, ModifyIndex: q.ModifyIndex}
	return out
}
