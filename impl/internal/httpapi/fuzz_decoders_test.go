package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/model"
)

// Properties of the decoders, each a function of the decoder so that a
// test can show it fails on a deliberately broken one
// (TestDecoderPropertiesCatchBrokenDecoders). Every accepted input must
// satisfy the request limits and survive a round trip: encoding what was
// decoded and decoding it again gives the same command.

// txnProblem is the txn decoder property.
func txnProblem(decode func([]byte) (model.Txn, error), body []byte) error {
	txn, err := decode(body)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) || (ae.status != http.StatusBadRequest && ae.status != http.StatusRequestEntityTooLarge) {
			return fmt.Errorf("refused without a 400/413 reason: %v", err)
		}
		return nil
	}
	if len(txn.Ops) > model.MaxTxnOps {
		return fmt.Errorf("accepted %d ops", len(txn.Ops))
	}
	ops := make([]map[string]any, 0, len(txn.Ops))
	for _, op := range txn.Ops {
		if p := txnOpOverLimits(op); p != "" {
			return fmt.Errorf("accepted an op over the limits: %s", p)
		}
		ops = append(ops, txnOpAsJSON(op))
	}
	again, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("re-encode: %v", err)
	}
	txn2, err := decode(again)
	if err != nil {
		return fmt.Errorf("re-encoded txn %s refused: %v", again, err)
	}
	if !reflect.DeepEqual(txn.Ops, txn2.Ops) {
		return fmt.Errorf("round trip changed the ops: %s -> %s", txnOpsText(txn.Ops), txnOpsText(txn2.Ops))
	}
	return nil
}

// txnOpOverLimits names the limit an accepted op is over (S39), or "".
func txnOpOverLimits(op model.TxnOp) string {
	switch {
	case op.KV != nil:
		if len(op.KV.Key) > maxKeyLen || len(op.KV.Session) > maxNameLen || len(op.KV.Value) > model.MaxValueSize {
			return fmt.Sprintf("key %d, session %d, value %d bytes", len(op.KV.Key), len(op.KV.Session), len(op.KV.Value))
		}
	case op.Node != nil:
		if len(op.Node.Node) > maxNameLen || len(op.Node.Address) > maxNameLen || len(op.Node.Meta) > maxNodeMeta {
			return fmt.Sprintf("node %d, address %d bytes, %d meta", len(op.Node.Node), len(op.Node.Address), len(op.Node.Meta))
		}
	case op.Service != nil:
		if len(op.Service.Node) > maxNameLen || len(op.Service.Service.ID) > maxNameLen || len(op.Service.Service.Tags) > maxTags {
			return fmt.Sprintf("node %d, service ID %d bytes, %d tags", len(op.Service.Node), len(op.Service.Service.ID), len(op.Service.Service.Tags))
		}
	case op.Check != nil:
		if len(op.Check.Node) > maxNameLen || len(op.Check.Check.CheckID) > maxNameLen || len(op.Check.Check.Definition) > maxOutputLen {
			return fmt.Sprintf("node %d, check ID %d, definition %d bytes", len(op.Check.Node), len(op.Check.Check.CheckID), len(op.Check.Check.Definition))
		}
	case op.Session != nil:
		if len(op.Session.ID) > maxNameLen {
			return fmt.Sprintf("session ID %d bytes", len(op.Session.ID))
		}
	}
	return ""
}

// txnOpAsJSON writes op back in the shape a client sends.
func txnOpAsJSON(op model.TxnOp) map[string]any {
	switch {
	case op.KV != nil:
		o := op.KV
		return map[string]any{"KV": txnKVJSON{Verb: o.Verb, Key: o.Key, Value: o.Value, Flags: o.Flags, Index: o.Index, Session: o.Session}}
	case op.Node != nil:
		o := op.Node
		return map[string]any{"Node": map[string]any{"Verb": o.Verb, "Node": map[string]any{"Node": o.Node, "ID": o.ID,
			"Address": o.Address, "TaggedAddresses": o.TaggedAddresses, "Meta": o.Meta, "ModifyIndex": o.Index}}}
	case op.Service != nil:
		o, sv := op.Service, op.Service.Service
		service := map[string]any{
			"ID": sv.ID, "Service": sv.Service, "Tags": sv.Tags, "Address": sv.Address, "Port": sv.Port, "Meta": sv.Meta,
			"TaggedAddresses": sv.TaggedAddresses, "ModifyIndex": o.Index,
			"Kind": sv.Kind, "Ports": sv.Ports, "SocketPath": sv.SocketPath, "EnableTagOverride": sv.EnableTagOverride}
		if sv.Weights != nil {
			service["Weights"] = sv.Weights
		}
		if sv.Locality != nil {
			service["Locality"] = sv.Locality
		}
		if sv.Proxy != "" {
			service["Proxy"] = json.RawMessage(sv.Proxy)
		}
		return map[string]any{"Service": map[string]any{"Verb": o.Verb, "Node": o.Node, "Service": service}}
	case op.Check != nil:
		o, c := op.Check, op.Check.Check
		check := map[string]any{"Node": o.Node, "CheckID": c.CheckID, "Name": c.Name, "Status": c.Status,
			"Notes": c.Notes, "Output": c.Output, "ServiceID": c.ServiceID, "Type": c.Type, "ModifyIndex": o.Index}
		if c.Definition != "" {
			check["Definition"] = json.RawMessage(c.Definition)
		}
		return map[string]any{"Check": map[string]any{"Verb": o.Verb, "Check": check}}
	case op.Session != nil:
		return map[string]any{"Session": map[string]any{"Verb": op.Session.Verb, "Session": map[string]any{"ID": op.Session.ID}}}
	}
	return map[string]any{}
}

func txnOpsText(ops []model.TxnOp) string {
	b, _ := json.Marshal(ops)
	return string(b)
}

// parseCreate is the whole of a session create's request checking: decode,
// limits, then validation, as sessionCreate runs them.
func parseCreate(body []byte, node string) (model.CreateSession, error) {
	cs, err := decodeSessionCreate(body, node)
	if err != nil {
		return cs, err
	}
	if me := createLimits(cs); me != nil {
		return cs, me
	}
	if me := validateCreate(cs); me != nil {
		return cs, me
	}
	return cs, nil
}

// createProblem is the session create property.
func createProblem(parse func([]byte, string) (model.CreateSession, error), body []byte) error {
	cs, err := parse(body, "node-a")
	if err != nil {
		return nil
	}
	lists := len(cs.Checks) + len(cs.NodeChecks) + len(cs.ServiceChecks)
	if len(cs.Name) > maxNameLen || len(cs.Node) > maxNameLen || len(cs.TTL) > maxTTLLen || lists > maxChecks {
		return fmt.Errorf("accepted a session over the limits: name %d, node %d, TTL %d bytes, %d checks",
			len(cs.Name), len(cs.Node), len(cs.TTL), lists)
	}
	ids := slices.Concat(cs.Checks, cs.NodeChecks)
	for _, sc := range cs.ServiceChecks {
		ids = append(ids, sc.ID, sc.Namespace)
	}
	for _, id := range ids {
		if len(id) > maxNameLen {
			return fmt.Errorf("accepted a %d-byte check ID", len(id))
		}
	}
	// The fixup leaves legacy Checks only beside a non-empty NodeChecks, and
	// never as exactly [serfHealth] (S56).
	if len(cs.Checks) > 0 && (len(cs.NodeChecks) == 0 || slices.Equal(cs.Checks, []string{model.SerfHealthCheckID})) {
		return fmt.Errorf("legacy Checks %q kept beside NodeChecks %q", cs.Checks, cs.NodeChecks)
	}
	if ml := model.ValidateTTL(cs.TTL); ml != nil {
		return fmt.Errorf("accepted TTL %q: %v", cs.TTL, ml)
	}
	// Round trip. A nil legacy list goes as [serfHealth], which lets
	// NodeChecks decide; a LockDelay below 1000 is read as seconds, so only
	// others compare.
	legacy := cs.Checks
	if len(legacy) == 0 {
		legacy = []string{model.SerfHealthCheckID}
	}
	enc := map[string]any{"Name": cs.Name, "Node": cs.Node, "Behavior": cs.Behavior, "TTL": cs.TTL,
		"Checks": legacy, "NodeChecks": append([]string{}, cs.NodeChecks...), "ServiceChecks": cs.ServiceChecks,
		"LockDelay": int64(cs.LockDelay)}
	again, err := json.Marshal(enc)
	if err != nil {
		return fmt.Errorf("re-encode: %v", err)
	}
	cs2, err := parse(again, "other-node")
	if err != nil {
		return fmt.Errorf("re-encoded session %s refused: %v", again, err)
	}
	if cs.Name != cs2.Name || cs.Node != cs2.Node || cs.Behavior != cs2.Behavior || cs.TTL != cs2.TTL ||
		!slices.Equal(cs.Checks, cs2.Checks) || !slices.Equal(cs.NodeChecks, cs2.NodeChecks) ||
		!slices.Equal(cs.ServiceChecks, cs2.ServiceChecks) ||
		(cs.LockDelay >= lockDelayMinThreshold && cs.LockDelay != cs2.LockDelay) {
		return fmt.Errorf("round trip changed the session: %+v -> %+v", cs, cs2)
	}
	return nil
}

// parseRegister is a catalog register's request checking, as
// catalogRegister runs it.
func parseRegister(body []byte) (model.Register, error) {
	var b catalogwire.Register
	if err := json.Unmarshal(body, &b); err != nil {
		return model.Register{}, errorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}
	if err := registerLimits(b); err != nil {
		return model.Register{}, err
	}
	return toRegister(b)
}

// registerProblem is the catalog register property.
func registerProblem(parse func([]byte) (model.Register, error), body []byte) error {
	reg, err := parse(body)
	if err != nil {
		return nil
	}
	if reg.Node == "" || reg.Address == "" || len(reg.Node) > maxNameLen || len(reg.Address) > maxNameLen || len(reg.Checks) > maxChecks {
		return fmt.Errorf("accepted a register over the limits or incomplete: node %d, address %d bytes, %d checks",
			len(reg.Node), len(reg.Address), len(reg.Checks))
	}
	checks := make([]map[string]any, 0, len(reg.Checks))
	for _, ch := range reg.Checks {
		if len(ch.CheckID) > maxNameLen || len(ch.Name) > maxNameLen || len(ch.ServiceID) > maxNameLen ||
			len(ch.Type) > maxNameLen || len(ch.Notes) > maxOutputLen || len(ch.Output) > maxOutputLen || !ch.Status.Valid() {
			return fmt.Errorf("accepted check %d/%d bytes, status %q", len(ch.CheckID), len(ch.Name), ch.Status)
		}
		checks = append(checks, map[string]any{"CheckID": ch.CheckID, "Name": ch.Name, "Status": ch.Status,
			"Notes": ch.Notes, "Output": ch.Output, "ServiceID": ch.ServiceID, "Type": ch.Type})
	}
	enc := map[string]any{"Node": reg.Node, "Address": reg.Address, "Checks": checks}
	if len(reg.Services) > 1 {
		return fmt.Errorf("accepted %d services in one register", len(reg.Services))
	}
	for _, sv := range reg.Services {
		if len(sv.ID) > maxNameLen || len(sv.Service) > maxNameLen || len(sv.Address) > maxNameLen ||
			len(sv.Tags) > maxTags || len(sv.Meta) > maxTags {
			return fmt.Errorf("accepted a service over the limits: %d tags, %d meta", len(sv.Tags), len(sv.Meta))
		}
		enc["Service"] = map[string]any{"ID": sv.ID, "Service": sv.Service, "Tags": sv.Tags,
			"Address": sv.Address, "Port": sv.Port, "Meta": sv.Meta}
	}
	again, err := json.Marshal(enc)
	if err != nil {
		return fmt.Errorf("re-encode: %v", err)
	}
	reg2, err := parse(again)
	if err != nil {
		return fmt.Errorf("re-encoded register %s refused: %v", again, err)
	}
	if reg.Node != reg2.Node || reg.Address != reg2.Address || !slices.Equal(reg.Checks, reg2.Checks) ||
		!slices.EqualFunc(reg.Services, reg2.Services, serviceSpecEqual) {
		return fmt.Errorf("round trip changed the register: %+v -> %+v", reg, reg2)
	}
	return nil
}

func serviceSpecEqual(a, b model.ServiceSpec) bool {
	return a.ID == b.ID && a.Service == b.Service && slices.Equal(a.Tags, b.Tags) && a.Address == b.Address &&
		a.Port == b.Port && maps.Equal(a.Meta, b.Meta)
}

// queryProblem is the read-options property.
func queryProblem(parse func(url.Values) (queryOpts, error), raw string) error {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil
	}
	q, err := parse(v)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != http.StatusBadRequest {
			return fmt.Errorf("refused without a 400 reason: %v", err)
		}
		return nil
	}
	_, stale := v["stale"]
	_, consistent := v["consistent"]
	if stale && consistent {
		return fmt.Errorf("accepted ?stale with ?consistent: %+v", q)
	}
	again := url.Values{}
	switch q.mode {
	case modeStale:
		again.Set("stale", "")
	case modeConsistent:
		again.Set("consistent", "")
	}
	if q.maxStale > 0 {
		again.Set("max_stale", q.maxStale.String())
	}
	if q.wait != 0 {
		again.Set("wait", q.wait.String())
	}
	if q.index != 0 {
		again.Set("index", fmt.Sprint(q.index))
	}
	q2, err := parse(again)
	if err != nil || q2 != q {
		return fmt.Errorf("round trip of %+v via %q gave %+v, %v", q, again.Encode(), q2, err)
	}
	return nil
}

// handlerOutcome is the property of every handler fuzz target: an answer
// from the allowed set, and only a 200 may change the state.
func handlerOutcome(code int, changed bool) error {
	switch code {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge:
		if changed {
			return fmt.Errorf("rejected with %d, yet the state changed", code)
		}
	default:
		return fmt.Errorf("unexpected status %d", code)
	}
	return nil
}

var querySeeds = []string{
	"", "stale", "consistent", "stale&consistent", "max_stale=5s", "max_stale=5s&consistent", "max_stale=-1s",
	"max_stale=x", "wait=10s", "wait=-5s", "wait=forever", "wait=99999999999h", "index=0", "index=18446744073709551615",
	"index=18446744073709551616", "index=-1", "index=1&wait=1ms", "leader", "index=%zz", "wait=1h&index=3&stale",
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range querySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if err := queryProblem(parseQuery, raw); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
	})
}

func FuzzDecodeTxn(f *testing.F) {
	for _, s := range txnSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`[{"KV":{"Verb":"set","Key":"` + strings.Repeat("k", maxKeyLen+1) + `"}}]`))
	f.Add([]byte(`[{"KV":{"Verb":"lock","Key":"a","Session":"` + strings.Repeat("s", maxNameLen+1) + `"}}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := txnProblem(decodeTxn, body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

func FuzzParseSessionCreate(f *testing.F) {
	for _, s := range sessionSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"Name":"` + strings.Repeat("n", maxNameLen+1) + `"}`))
	f.Add([]byte(`{"TTL":"` + strings.Repeat("0", maxTTLLen) + `10s"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := createProblem(parseCreate, body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

var registerSeeds = []string{
	``, `{}`, `null`, `[]`, `{"Node":"n"}`, `{"Node":"n","Address":"a"}`,
	`{"Node":"n","Address":"a","Check":{"CheckID":"c","Status":"passing"}}`,
	`{"Node":"n","Address":"a","Checks":[{"Name":"c"},null,{"CheckID":"d","Status":"bogus"}]}`,
	`{"Node":"n","Address":"a","Check":{"Node":"m","CheckID":"c"}}`,
	`{"Node":"n","Address":"a","Service":{"Service":"web"}}`,
	`{"Node":"n","Address":"a","Service":{"ID":"w1","Service":"web","Tags":["a","B"],"Port":80,"Meta":{"k":"v"}},"Check":{"CheckID":"c","ServiceID":"w1","Notes":"n","Output":"o","Type":"ttl","Status":"passing"}}`,
	`{"Node":"n","Address":"a","Service":{"ID":"w1"}}`, `{"Node":"n","Address":"a","Service":"web"}`, `{"Node":"n","Address":"a","Service":{"Tags":"x"}}`,
	`{"Node":"n","Address":"a","Checks":[{"CheckID":"c","ServiceID":"s"}]}`,
	`{"Node":"node-a","Address":"127.0.0.1","Check":{"CheckID":"serfHealth","Status":"critical"}}`,
	`{"node":"n","address":"a","checks":[{"checkid":"x","status":"warning"}]}`,
}

func FuzzParseRegister(f *testing.F) {
	for _, s := range registerSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"Node":"` + strings.Repeat("n", maxNameLen+1) + `","Address":"a"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := registerProblem(parseRegister, body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

// FuzzCatalogHandler sends any body to register or deregister: an allowed
// answer, and a rejection changes nothing.
func FuzzCatalogHandler(f *testing.F) {
	for _, s := range registerSeeds {
		f.Add(true, []byte(s))
	}
	for _, s := range []string{`{"Node":"node-a"}`, `{"Node":"node-a","CheckID":"serfHealth"}`, `{"Node":"x","ServiceID":"s"}`, `{}`,
		`{"Node":"node-a","ServiceID":"web","CheckID":"serfHealth"}`} {
		f.Add(false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, register bool, body []byte) {
		h, store := fuzzServer(t)
		before := store.Hash()
		path := "/v1/catalog/deregister"
		if register {
			path = "/v1/catalog/register"
		}
		rec := serve(h, http.MethodPut, path, body)
		if err := handlerOutcome(rec.Code, store.Hash() != before); err != nil {
			t.Fatalf("%s %q: %v (answer %q)", path, body, err, rec.Body)
		}
	})
}

// FuzzKVHandler sends any key, query and body with each method: an allowed
// answer, a rejection changes nothing, and no key over the limit is stored.
func FuzzKVHandler(f *testing.F) {
	for i, q := range append(querySeeds, "cas=0", "cas=x", "flags=7", "acquire=s1", "release=s1", "acquire=s1&release=s1",
		"recurse", "keys&separator=/", "raw", "cas=1&recurse", "acquire=nope", "flags=18446744073709551616") {
		f.Add(uint8(i), "a", q, []byte("v"))
	}
	f.Add(uint8(1), strings.Repeat("k", maxKeyLen+1), "", []byte("v"))
	f.Fuzz(func(t *testing.T, method uint8, key, query string, body []byte) {
		m := []string{http.MethodGet, http.MethodPut, http.MethodDelete}[int(method)%3]
		h, store := fuzzServer(t)
		if _, err := store.Apply(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "node-a"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Apply(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "a", Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		target := (&url.URL{Path: "/v1/kv/" + key, RawQuery: query}).String()
		if _, err := url.ParseRequestURI(target); err != nil || strings.ContainsAny(target, " \t\r\n") {
			return // not a request line a client could send
		}
		before := store.Hash()
		rec := serve(h, m, target, body)
		if err := handlerOutcome(rec.Code, store.Hash() != before); err != nil {
			t.Fatalf("%s %q: %v (answer %q)", m, target, err, rec.Body)
		}
		for k := range store.Snapshot().Entries() {
			if len(k) > maxKeyLen {
				t.Fatalf("%s %q stored a %d-byte key", m, target, len(k))
			}
		}
	})
}

// FuzzSessionHandler sends any ID and query to the session endpoints that
// take them: an allowed answer, and a rejection changes nothing.
func FuzzSessionHandler(f *testing.F) {
	paths := []struct{ method, prefix string }{
		{put, "/v1/session/destroy/"}, {put, "/v1/session/renew/"}, {get, "/v1/session/info/"},
		{get, "/v1/session/node/"}, {get, "/v1/session/list?"},
	}
	for i, q := range querySeeds {
		f.Add(uint8(i), "s1", q)
	}
	f.Add(uint8(0), strings.Repeat("s", maxNameLen+1), "")
	f.Fuzz(func(t *testing.T, which uint8, id, query string) {
		p := paths[int(which)%len(paths)]
		h, store := fuzzServer(t)
		if _, err := store.Apply(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "node-a"}}); err != nil {
			t.Fatal(err)
		}
		target := (&url.URL{Path: p.prefix + id, RawQuery: query}).String()
		if strings.HasSuffix(p.prefix, "?") {
			target = (&url.URL{Path: strings.TrimSuffix(p.prefix, "?"), RawQuery: query}).String()
		}
		if _, err := url.ParseRequestURI(target); err != nil || strings.ContainsAny(target, " \t\r\n") {
			return
		}
		before := store.Hash()
		rec := serve(h, p.method, target, nil)
		changed := store.Hash() != before
		if err := handlerOutcome(rec.Code, changed); err != nil {
			t.Fatalf("%s %q: %v (answer %q)", p.method, target, err, rec.Body)
		}
		if changed && (p.method == get || len(id) > maxNameLen) {
			t.Fatalf("%s %q changed the state", p.method, target)
		}
	})
}

// Each decoder property fails on a deliberately broken decoder, on inputs
// that are also in its fuzz target's seed corpus.
func TestDecoderPropertiesCatchBrokenDecoders(t *testing.T) {
	longKeyTxn := []byte(`[{"KV":{"Verb":"set","Key":"` + strings.Repeat("k", maxKeyLen+1) + `"}}]`)
	noLimitsTxn := func(body []byte) (model.Txn, error) {
		var ops []txnOpJSON
		if err := json.Unmarshal(body, &ops); err != nil {
			return model.Txn{}, errorf(http.StatusBadRequest, "%v", err)
		}
		var txn model.Txn
		for _, op := range ops {
			if op.KV != nil {
				txn.Ops = append(txn.Ops, model.TxnOp{KV: &model.KVOp{Verb: op.KV.Verb, Key: op.KV.Key, Session: op.KV.Session}})
			}
		}
		return txn, nil
	}
	plainErrorTxn := func(body []byte) (model.Txn, error) {
		txn, err := decodeTxn(body)
		if err != nil {
			return txn, errors.New("bad txn") // no status: would answer 500
		}
		return txn, nil
	}
	flagsLostOnce := func(body []byte) (model.Txn, error) {
		txn, err := decodeTxn(body)
		for i := range txn.Ops {
			if kv := txn.Ops[i].KV; kv != nil {
				kv.Flags++ // not idempotent: the round trip sees it
			}
		}
		return txn, err
	}
	noLimitsCreate := func(body []byte, node string) (model.CreateSession, error) {
		cs, err := decodeSessionCreate(body, node)
		if err == nil {
			if me := validateCreate(cs); me != nil {
				return cs, me
			}
		}
		return cs, err
	}
	noLimitsRegister := func(body []byte) (model.Register, error) {
		var b catalogwire.Register
		if err := json.Unmarshal(body, &b); err != nil {
			return model.Register{}, err
		}
		return toRegister(b)
	}
	staleWins := func(v url.Values) (queryOpts, error) {
		if _, ok := v["stale"]; ok {
			v = maps.Clone(v)
			v.Del("consistent")
		}
		return parseQuery(v)
	}
	for _, tc := range []struct {
		name string
		fail func() error
	}{
		{"txn without limits", func() error { return txnProblem(noLimitsTxn, longKeyTxn) }},
		{"txn refusing without a status", func() error { return txnProblem(plainErrorTxn, []byte(`{`)) }},
		{"txn decode not idempotent", func() error { return txnProblem(flagsLostOnce, []byte(txnSeeds[8])) }},
		{"create without limits", func() error {
			return createProblem(noLimitsCreate, []byte(`{"Name":"`+strings.Repeat("n", maxNameLen+1)+`"}`))
		}},
		{"register without limits", func() error {
			return registerProblem(noLimitsRegister, []byte(`{"Node":"`+strings.Repeat("n", maxNameLen+1)+`","Address":"a"}`))
		}},
		{"query taking stale over consistent", func() error { return queryProblem(staleWins, "stale&consistent") }},
		{"handler changing state on a 413", func() error { return handlerOutcome(http.StatusRequestEntityTooLarge, true) }},
		{"handler answering 500", func() error { return handlerOutcome(http.StatusInternalServerError, false) }},
	} {
		if tc.fail() == nil {
			t.Errorf("%s: the property passed", tc.name)
		}
	}
	// And the real decoders pass on the same inputs.
	for _, err := range []error{
		txnProblem(decodeTxn, longKeyTxn), txnProblem(decodeTxn, []byte(`{`)), txnProblem(decodeTxn, []byte(txnSeeds[8])),
		queryProblem(parseQuery, "stale&consistent"),
	} {
		if err != nil {
			t.Errorf("real decoder failed its property: %v", err)
		}
	}
}
