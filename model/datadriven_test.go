package model_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/tenurekv/tenure/model"
)

// TestScenarios runs testdata/model/*.txt. Each directive is one input to the
// model (or to a pure helper); the expected output is reviewed as a diff and
// regenerated with -rewrite. Invariants are checked after every step.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "../testdata/model", func(t *testing.T, path string) {
		h := &harness{s: model.New()}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.run(d)
			if err != nil {
				d.Fatalf(t, "%s: %v", filepath.Base(path), err)
			}
			return out
		})
	})
}

type harness struct {
	s      *model.State
	idx    uint64
	delays model.LockDelays
	ttl    model.TTLDeadlines
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	if strings.HasPrefix(d.Cmd, "acl-") {
		return h.runACL(d) // aclharness_test.go
	}
	switch d.Cmd {
	case "state":
		return dumpState(h.s), nil
	case "get":
		e, ok := h.s.Get(arg(d, "key"))
		if !ok {
			return fmt.Sprintf("absent (index %d)\n", h.s.KeyIndex(arg(d, "key"))), nil
		}
		return fmtEntry(e) + "\n", nil
	case "index":
		if d.HasArg("prefix") {
			return fmt.Sprintf("%d\n", h.s.PrefixIndex(arg(d, "prefix"))), nil
		}
		return fmt.Sprintf("%d\n", h.s.KeyIndex(arg(d, "key"))), nil
	case "keys":
		return fmt.Sprintf("%q\n", h.s.Keys(arg(d, "prefix"), arg(d, "separator"))), nil
	case "sequencer":
		err := h.s.CheckSequencer(model.Sequencer{Key: arg(d, "key"), LockIndex: uintArg(d, "lock-index"), Session: arg(d, "session")})
		if err != nil {
			return "stale: " + err.Error() + "\n", nil
		}
		return "valid\n", nil
	case "delay-arm":
		h.delays.Arm(arg(d, "key"), at(d, "now"), durArg(d, "d"))
		return fmt.Sprintf("remaining %v\n", h.delays.Remaining(arg(d, "key"), at(d, "now"))), nil
	case "delay-check":
		k, now := arg(d, "key"), at(d, "now")
		return fmt.Sprintf("blocks=%v remaining=%v\n", h.delays.Blocks(k, now), h.delays.Remaining(k, now)), nil
	case "ttl-reset":
		h.ttl.Reset(arg(d, "id"), at(d, "now"), durArg(d, "ttl"), 2)
		dl, ok := h.ttl.Deadline(arg(d, "id"))
		if !ok {
			return "no deadline\n", nil
		}
		return fmt.Sprintf("deadline %v\n", dl.Sub(time.Unix(0, 0))), nil
	case "ttl-expired":
		return fmt.Sprintf("%q\n", h.ttl.Expired(at(d, "now"))), nil
	case "ttl-clear":
		h.ttl.Clear()
		return fmt.Sprintf("tracked %d\n", h.ttl.Len()), nil
	case "fixup":
		legacy, node := model.FixupSessionChecks(list(d, "checks"), list(d, "node-checks"))
		return fmt.Sprintf("checks=%q node-checks=%q\n", legacy, node), nil
	case "instances":
		var b strings.Builder
		for _, in := range h.s.ServiceInstances(arg(d, "service")) {
			b.WriteString(fmtInstance(in))
		}
		return orNone(b.String()), nil
	case "service-checks":
		var b strings.Builder
		for _, c := range h.s.ServiceChecks(arg(d, "service")) {
			fmt.Fprintf(&b, "%s\n", fmtCheck(c))
		}
		return orNone(b.String()), nil
	case "services":
		var b strings.Builder
		names := h.s.ServiceNames(nil)
		for _, n := range slices.Sorted(maps.Keys(names)) {
			fmt.Fprintf(&b, "%s %q\n", n, names[n])
		}
		return orNone(b.String()), nil
	case "resolve":
		name := arg(d, "query")
		q, ok := h.s.ResolveQuery(name)
		switch {
		case !ok:
			return "query not found\n", nil
		case model.TemplateByID(q, name):
			return fmt.Sprintf("template %s named by its ID\n", q.ID), nil
		}
		return fmt.Sprintf("query %s\n", q.ID), nil
	case "coords":
		return fmtCoords(h.s), nil
	case "distance":
		return fmt.Sprintf("%v\n", model.SetDistance(h.s.NodeCoordinates(arg(d, "from")), h.s.NodeCoordinates(arg(d, "to")))), nil
	case "execute":
		q, ok := h.s.ResolveQuery(arg(d, "query"))
		if !ok {
			return "query not found\n", nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "query %s\n", q.ID)
		for _, in := range h.s.ExecuteQuery(q) {
			b.WriteString(fmtInstance(in))
		}
		return b.String(), nil
	}
	cmd, err := parseCommand(d)
	if err != nil {
		return "", err
	}
	return h.apply(cmd)
}

// apply runs one command and reports its result and every entry it changed.
func (h *harness) apply(cmd model.Command) (string, error) {
	prev := h.s.Clone()
	h.idx++
	res := h.s.Apply(h.idx, cmd)
	if err := h.s.CheckInvariants(); err != nil {
		return "", err
	}
	if err := model.CheckTransition(prev, h.s, res); err != nil {
		return "", err
	}
	var b strings.Builder
	switch {
	case res.Err != nil:
		fmt.Fprintf(&b, "error: %s\n", res.Err.Msg)
	case len(res.TxnErrors) > 0:
		for _, e := range res.TxnErrors {
			fmt.Fprintf(&b, "txn error op %d: %s\n", e.OpIndex, e.What)
		}
	default:
		fmt.Fprintf(&b, "%v @%d\n", res.OK, res.Index)
		if res.QueryID != "" {
			fmt.Fprintf(&b, "query %s\n", res.QueryID)
		}
	}
	if res.Locked.Key != "" {
		fmt.Fprintf(&b, "locked %s\n", fmtEntry(res.Locked))
	}
	for _, r := range res.TxnResults {
		fmt.Fprintf(&b, "result %s\n", fmtResult(r))
	}
	for _, id := range res.Invalidated {
		fmt.Fprintf(&b, "invalidated %s\n", id)
	}
	for _, id := range res.QueriesDeleted {
		fmt.Fprintf(&b, "query deleted %s\n", id)
	}
	for _, k := range res.DelayRefused {
		fmt.Fprintf(&b, "refused for lock-delay %s\n", k)
	}
	for _, ld := range res.LockDelays {
		fmt.Fprintf(&b, "lock-delay %s %v\n", ld.Key, ld.Delay)
		h.delays.Arm(ld.Key, time.Unix(0, 0), ld.Delay)
	}
	b.WriteString(diffKV(prev, h.s))
	return b.String(), nil
}

func parseCommand(d *datadriven.TestData) (model.Command, error) {
	switch d.Cmd {
	case "register":
		r := &model.Register{Node: arg(d, "node"), ID: arg(d, "id"), Address: arg(d, "addr"),
			NodeMeta: metaArg(d, "node-meta"), TaggedAddresses: metaArg(d, "tagged"),
			SkipNodeUpdate: d.HasArg("skip-node-update"), KeepRecord: d.HasArg("keep-record")}
		for _, sv := range list(d, "service") {
			r.Services = append(r.Services, parseService(sv))
		}
		for _, c := range list(d, "check") {
			// id:status or id:status:service-id
			id, rest, _ := strings.Cut(c, ":")
			status, svc, _ := strings.Cut(rest, ":")
			r.Checks = append(r.Checks, model.CheckSpec{CheckID: id, Name: id, Status: model.Health(status), ServiceID: svc})
		}
		return model.Command{Register: r}, nil
	case "deregister":
		return model.Command{Deregister: &model.Deregister{Node: arg(d, "node"), ServiceID: arg(d, "service"), CheckID: arg(d, "check")}}, nil
	case "query-create", "query-update", "query-delete":
		verb := model.QueryVerb(strings.TrimPrefix(d.Cmd, "query-"))
		q := model.PreparedQuery{ID: arg(d, "id"), Name: arg(d, "name"), Session: arg(d, "session"),
			Token: arg(d, "token"), DNS: model.QueryDNS{TTL: arg(d, "dns-ttl")}}
		q.Service = model.ServiceQuery{Service: arg(d, "service"), OnlyPassing: d.HasArg("only-passing"),
			Tags: list(d, "tags"), IgnoreCheckIDs: list(d, "ignore")}
		if d.HasArg("nearest") {
			n, err := strconv.Atoi(arg(d, "nearest"))
			if err != nil {
				return model.Command{}, fmt.Errorf("nearest: %w", err)
			}
			q.Service.Failover.NearestN = n
		}
		q.Service.Failover.Datacenters = list(d, "datacenters")
		for _, t := range list(d, "target") {
			q.Service.Failover.Targets = append(q.Service.Failover.Targets, model.QueryTarget{Peer: t})
		}
		q.Service.ServiceMeta = metaArg(d, "service-meta")
		q.Service.NodeMeta = metaArg(d, "node-meta")
		q.Template = model.QueryTemplate{Type: arg(d, "template"), Regexp: arg(d, "regexp"),
			RemoveEmptyTags: d.HasArg("remove-empty-tags")}
		return model.Command{Query: &model.QueryOp{Op: verb, Query: q}}, nil
	case "create-session":
		c := &model.CreateSession{ID: arg(d, "id"), Name: arg(d, "name"), Node: arg(d, "node"),
			Behavior: model.Behavior(arg(d, "behavior")), TTL: arg(d, "ttl"), LockDelay: model.DefaultLockDelay,
			Checks: list(d, "checks"), NodeChecks: list(d, "node-checks")}
		for _, id := range list(d, "service-checks") {
			c.ServiceChecks = append(c.ServiceChecks, model.ServiceCheck{ID: id})
		}
		if d.HasArg("lock-delay") {
			c.LockDelay = durArg(d, "lock-delay")
		}
		return model.Command{CreateSession: c}, nil
	case "destroy":
		return model.Command{DestroySession: &model.DestroySession{ID: arg(d, "id")}}, nil
	case "reap":
		return model.Command{Reap: &model.Reap{Index: uintArg(d, "index")}}, nil
	case "coordinates":
		return parseCoordinates(d)
	case "txn":
		var t model.Txn
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			op, err := parseTxnLine(line)
			if err != nil {
				return model.Command{}, err
			}
			t.Ops = append(t.Ops, op)
		}
		return model.Command{Txn: &t}, nil
	}
	op := model.KVOp{Verb: model.KVVerb(d.Cmd), Key: arg(d, "key"), Value: []byte(arg(d, "value")),
		Flags: uintArg(d, "flags"), Index: uintArg(d, "index"), Session: arg(d, "session"),
		LockDelaySeen: uintArg(d, "delay-seen")}
	if d.HasArg("size") {
		op.Value = make([]byte, uintArg(d, "size"))
	}
	return model.Command{KV: &op}, nil
}

// metaArg reads a repeatable "key:value" argument into a map; nil if absent.
func metaArg(d *datadriven.TestData, key string) map[string]string {
	var m map[string]string
	for _, kv := range list(d, key) {
		k, v, _ := strings.Cut(kv, ":")
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m
}

// parseService reads "id=name" or "id=name/tag1+tag2/meta-key:value"; a bare
// "name" leaves the ID to default to the name.
func parseService(spec string) model.ServiceSpec {
	parts := strings.Split(spec, "/")
	sv := model.ServiceSpec{Service: parts[0]}
	if id, name, ok := strings.Cut(parts[0], "="); ok {
		sv.ID, sv.Service = id, name
	}
	if len(parts) > 1 && parts[1] != "" {
		sv.Tags = strings.Split(parts[1], "+")
	}
	if len(parts) > 2 {
		k, v, _ := strings.Cut(parts[2], ":")
		sv.Meta = map[string]string{k: v}
	}
	return sv
}

func fmtCheck(c model.Check) string {
	s := fmt.Sprintf("check %s/%s %s", c.Node, c.CheckID, c.Status)
	if c.ServiceID != "" {
		s += fmt.Sprintf(" service=%s(%s)", c.ServiceID, c.ServiceName)
	}
	return s
}

func fmtInstance(in model.ServiceInstance) string {
	var ids []string
	for _, c := range in.Checks {
		ids = append(ids, c.CheckID+":"+string(c.Status))
	}
	return fmt.Sprintf("instance %s/%s name=%s tags=%q checks=%v\n", in.Node.Name, in.Service.ServiceID, in.Service.Service, in.Service.Tags, ids)
}

func orNone(s string) string {
	if s == "" {
		return "none\n"
	}
	return s
}

// parseTxnLine reads a KV op line (parseOpLine) or a catalog or session op:
//
//	node <verb> node=n id=uuid addr=a meta=k:v index=n
//	service <verb> node=n id=s name=web tags=a+b addr=a index=n
//	check <verb> node=n id=c name=c status=critical service=s index=n
//	session <verb> id=s
func parseTxnLine(line string) (model.TxnOp, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		kv, err := parseOpLine(line)
		return model.TxnOp{KV: &kv}, err
	}
	args := map[string]string{}
	var index uint64
	for _, f := range fields[2:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return model.TxnOp{}, fmt.Errorf("txn op field %q is not key=value", f)
		}
		if k == "index" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return model.TxnOp{}, fmt.Errorf("txn op index: %w", err)
			}
			index = n
		}
		args[k] = v
	}
	verb := model.CatalogVerb(fields[1])
	switch fields[0] {
	case "node":
		o := &model.NodeTxnOp{Verb: verb, Node: args["node"], ID: args["id"], Address: args["addr"], Index: index}
		if m, ok := args["meta"]; ok {
			k, v, _ := strings.Cut(m, ":")
			o.Meta = map[string]string{k: v}
		}
		return model.TxnOp{Node: o}, nil
	case "service":
		sv := model.ServiceSpec{ID: args["id"], Service: args["name"], Address: args["addr"]}
		if tags, ok := args["tags"]; ok {
			sv.Tags = strings.Split(tags, "+")
		}
		if m, ok := args["meta"]; ok {
			k, v, _ := strings.Cut(m, ":")
			sv.Meta = map[string]string{k: v}
		}
		return model.TxnOp{Service: &model.ServiceTxnOp{Verb: verb, Node: args["node"], Service: sv, Index: index}}, nil
	case "check":
		c := model.CheckSpec{CheckID: args["id"], Name: args["name"], Status: model.Health(args["status"]), ServiceID: args["service"]}
		return model.TxnOp{Check: &model.CheckTxnOp{Verb: verb, Node: args["node"], Check: c, Index: index}}, nil
	case "session":
		return model.TxnOp{Session: &model.SessionTxnOp{Verb: model.SessionVerb(fields[1]), ID: args["id"]}}, nil
	}
	kv, err := parseOpLine(line)
	return model.TxnOp{KV: &kv}, err
}

// fmtResult shows one txn result.
func fmtResult(r model.TxnResult) string {
	switch {
	case r.KV != nil:
		return fmtEntry(*r.KV)
	case r.Node != nil:
		n := r.Node
		return fmt.Sprintf("node %s id=%q addr=%q meta=%v create=%d modify=%d", n.Name, n.ID, n.Address, n.Meta, n.CreateIndex, n.ModifyIndex)
	case r.Service != nil:
		sv := r.Service
		return fmt.Sprintf("service %s/%s name=%s tags=%q create=%d modify=%d", sv.Node, sv.ServiceID, sv.Service, sv.Tags, sv.CreateIndex, sv.ModifyIndex)
	case r.Check != nil:
		c := r.Check
		return fmt.Sprintf("%s create=%d modify=%d", fmtCheck(*c), c.CreateIndex, c.ModifyIndex)
	}
	return "empty result"
}

// parseOpLine reads "verb key=k value=v session=s index=n flags=n".
func parseOpLine(line string) (model.KVOp, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return model.KVOp{}, fmt.Errorf("empty txn line")
	}
	op := model.KVOp{Verb: model.KVVerb(fields[0])}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return op, fmt.Errorf("txn op field %q is not key=value", f)
		}
		switch k {
		case "key":
			op.Key = v
		case "value":
			op.Value = []byte(v)
		case "session":
			op.Session = v
		case "index", "flags":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return op, fmt.Errorf("txn op %s: %w", k, err)
			}
			if k == "index" {
				op.Index = n
			} else {
				op.Flags = n
			}
		default:
			return op, fmt.Errorf("unknown txn op field %q", k)
		}
	}
	return op, nil
}

func arg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

// list gathers every value of a repeatable argument; "none" means an empty list.
func list(d *datadriven.TestData, key string) []string {
	var out []string
	for _, a := range d.CmdArgs {
		if a.Key != key {
			continue
		}
		if len(a.Vals) == 1 && a.Vals[0] == "none" {
			return []string{}
		}
		out = append(out, a.Vals...)
	}
	return out
}

func uintArg(d *datadriven.TestData, key string) uint64 {
	if !d.HasArg(key) {
		return 0
	}
	n, err := strconv.ParseUint(arg(d, key), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", key, err))
	}
	return n
}

func durArg(d *datadriven.TestData, key string) time.Duration {
	v, err := time.ParseDuration(arg(d, key))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", key, err))
	}
	return v
}

// at reads a time given as an offset from the epoch ("now=12s").
func at(d *datadriven.TestData, key string) time.Time {
	return time.Unix(0, 0).Add(durArg(d, key))
}

func fmtEntry(e model.KVEntry) string {
	value := fmt.Sprintf("%q", e.Value)
	if len(e.Value) > 32 {
		value = fmt.Sprintf("<%d bytes>", len(e.Value))
	}
	s := fmt.Sprintf("%s value=%s flags=%d lock-index=%d", e.Key, value, e.Flags, e.LockIndex)
	if e.Session != "" {
		s += " session=" + e.Session
	}
	return s + fmt.Sprintf(" create=%d modify=%d", e.CreateIndex, e.ModifyIndex)
}

func diffKV(prev, next *model.State) string {
	var b strings.Builder
	for _, e := range next.List("") {
		if old, ok := prev.Get(e.Key); !ok || fmtEntry(old) != fmtEntry(e) {
			fmt.Fprintf(&b, "  kv %s\n", fmtEntry(e))
		}
	}
	for _, e := range prev.List("") {
		if _, ok := next.Get(e.Key); !ok {
			fmt.Fprintf(&b, "  kv %s deleted\n", e.Key)
		}
	}
	return b.String()
}

func dumpState(st *model.State) string {
	var b strings.Builder
	s := st.Snapshot()
	t := s.Tables
	fmt.Fprintf(&b, "tables nodes=%d checks=%d sessions=%d kv=%d", t.Nodes, t.Checks, t.Sessions, t.KV)
	// Only scenarios that use services or queries show their tables, so
	// the older scenarios' expectations stay as written.
	if t.Services != 0 || t.Queries != 0 {
		fmt.Fprintf(&b, " services=%d queries=%d", t.Services, t.Queries)
	}
	b.WriteString("\n")
	for _, n := range st.NodeList() {
		fmt.Fprintf(&b, "node %s create=%d modify=%d", n.Name, n.CreateIndex, n.ModifyIndex)
		// Only scenarios that give nodes an ID, meta or tagged addresses
		// show them, so the older scenarios' expectations stay as written.
		if n.ID != "" || n.Meta != nil || n.TaggedAddresses != nil {
			fmt.Fprintf(&b, " id=%q meta=%v tagged=%v", n.ID, n.Meta, n.TaggedAddresses)
		}
		b.WriteString("\n")
	}
	for _, sv := range st.ServiceList("") {
		fmt.Fprintf(&b, "service %s/%s name=%s tags=%q create=%d modify=%d\n", sv.Node, sv.ServiceID, sv.Service, sv.Tags, sv.CreateIndex, sv.ModifyIndex)
	}
	for _, c := range st.CheckList("", "") {
		fmt.Fprintf(&b, "%s\n", fmtCheck(c))
	}
	for _, se := range st.SessionList("") {
		fmt.Fprintf(&b, "session %s node=%s checks=%v behavior=%s ttl=%q lock-delay=%v create=%d",
			se.ID, se.Node, se.Checks, se.Behavior, se.TTL, se.LockDelay, se.CreateIndex)
		if len(se.NodeChecks) > 0 || len(se.ServiceChecks) > 0 {
			fmt.Fprintf(&b, " node-checks=%v service-checks=%v", se.NodeChecks, se.ServiceChecks)
		}
		b.WriteString("\n")
	}
	for _, q := range st.QueryList() {
		fmt.Fprintf(&b, "query %s name=%q session=%q service=%s create=%d modify=%d", q.ID, q.Name, q.Session, q.Service.Service, q.CreateIndex, q.ModifyIndex)
		if q.IsTemplate() {
			fmt.Fprintf(&b, " template=%s regexp=%q remove-empty-tags=%v", q.Template.Type, q.Template.Regexp, q.Template.RemoveEmptyTags)
		}
		b.WriteString("\n")
	}
	for _, e := range st.List("") {
		fmt.Fprintf(&b, "kv %s\n", fmtEntry(e))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Tombstones)) {
		fmt.Fprintf(&b, "tombstone %s at=%d\n", k, s.Tombstones[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.LockIssued)) {
		fmt.Fprintf(&b, "issued %s lock-index=%d\n", k, s.LockIssued[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.DelayedAt)) {
		fmt.Fprintf(&b, "delayed %s at=%d\n", k, s.DelayedAt[k])
	}
	if s.LockFloor != 0 || s.ReapedThrough != 0 {
		fmt.Fprintf(&b, "reaped through=%d lock-floor=%d\n", s.ReapedThrough, s.LockFloor)
	}
	return b.String()
}
