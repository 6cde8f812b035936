package checks

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/linearizability"
	"github.com/tenurekv/tenure/model"
)

// invalidationWindow is how long before its first observed apply a
// server-initiated change is placed. Any client request ordered after it in
// the log is applied after it on every server, so it cannot return before
// the first apply; any request ordered before it was proposed before it. A
// narrow window keeps successive events (a false positive's critical and
// the anti-entropy's passing, milliseconds apart) in their log order.
const invalidationWindow = time.Millisecond

// historyOf turns a trace into the client-observed history the
// linearizability checker reads: every client request, plus the invalidations
// the servers made on their own (TTL expiry, check changes, node
// deregistrations), each placed in a window ending at the first apply any
// server was seen to make.
func historyOf(events []core.Event) linearizability.History {
	h, _ := history(NewIndex(events))
	return h
}

// history is historyOf, also returning how many lock-delay refusals it left
// out because only a late arming explains them (latedelay.go).
func history(ix *traceIndex) (linearizability.History, int) {
	var h linearizability.History
	slack := lockDelaySlack(ix)
	h.LockDelaySlack = nanos(slack)
	excused := lateRefusals(ix, slack)
	for _, s := range ix.hdr.Servers {
		h.Setup = append(h.Setup, serfRegister(s, model.HealthPassing))
	}
	ids := map[string]int{}
	clientID := func(name string) int {
		if id, ok := ids[name]; ok {
			return id
		}
		ids[name] = len(ids)
		return ids[name]
	}
	destroyCall := map[string]time.Duration{}
	for _, op := range ix.ops {
		if excused[op.Call.Op] {
			continue
		}
		if lop, ok := historyOp(op); ok {
			lop.Client = clientID(op.Client)
			h.Ops = append(h.Ops, lop)
		}
		// A destroy that may have taken effect explains a session's removal.
		if op.Call.Req == core.ReqDestroy && !op.notApplied() {
			if t, ok := destroyCall[op.Call.ID]; !ok || op.CallAt < t {
				destroyCall[op.Call.ID] = op.CallAt
			}
		}
	}
	// Catalog changes the servers made on their own, once per raft index
	// that made them, placed where the first server applied that index: a
	// lagging server may apply it much later, or together with later
	// entries. They are check status changes (serfHealth's from the leader,
	// an agent check's from its agent's anti-entropy) and node
	// deregistrations.
	first := firstApplies(ix)
	type catalogChange struct {
		node   string
		check  string // "" for the node's deregistration
		status model.Health
		index  uint64
	}
	seen := map[catalogChange]bool{}
	var changes []catalogChange
	add := func(cc catalogChange) {
		if !seen[cc] {
			seen[cc] = true
			changes = append(changes, cc)
		}
	}
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for nc, st := range o.Obs.Checks {
			node, check, _ := strings.Cut(nc, "/")
			add(catalogChange{node, check, st, o.Obs.Index})
		}
		for _, n := range o.Obs.GoneNodes {
			add(catalogChange{node: n, index: o.Obs.Index})
		}
	}
	// One sequence in log order: a node deregistered and registered again
	// must meet the model in that order. Map iteration made the order
	// within an index arbitrary; sort it too, for a deterministic history.
	slices.SortFunc(changes, func(a, b catalogChange) int {
		return cmp.Or(cmp.Compare(a.index, b.index), strings.Compare(a.node, b.node), strings.Compare(a.check, b.check))
	})
	criticalAt := map[string][]uint64{} // node/check → indexes at which it went critical
	lastCatalog := time.Duration(-1)
	for _, cc := range changes {
		var cmd model.Command
		var kind string
		if cc.check == "" {
			cmd, kind = model.Command{Deregister: &model.Deregister{Node: cc.node}}, "node-deregister"
		} else {
			if cc.status == model.HealthCritical {
				criticalAt[cc.node+"/"+cc.check] = append(criticalAt[cc.node+"/"+cc.check], cc.index)
			}
			cmd = checkRegister(cc.node, cc.check, cc.status)
			kind = cc.check + "-" + string(cc.status)
		}
		// Successive changes keep their log order even when first applied
		// at the same instant: each is placed at least 1ns after the last.
		latest := max(first.at(cc.index), lastCatalog+1)
		earliest := max(latest-invalidationWindow, lastCatalog+1)
		lastCatalog = latest
		h.Events = append(h.Events, linearizability.Event{Kind: kind,
			Earliest: nanos(earliest), Latest: nanos(latest), Command: &cmd})
	}
	// Sessions the servers removed on their own: TTL expiries. A session
	// bound to a check of its node that went critical after the session
	// was created is that check event's doing; a session whose node the
	// same entry removed is the node-deregister event's.
	seenGone := map[string]bool{}
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for _, s := range o.Obs.GoneSess {
			if seenGone[s.ID] {
				continue
			}
			seenGone[s.ID] = true
			if t, ok := destroyCall[s.ID]; ok && t <= o.At {
				continue // the client's destroy is in the history
			}
			if slices.Contains(o.Obs.GoneNodes, s.Node) {
				continue
			}
			if slices.ContainsFunc(s.CheckIDs(), func(c string) bool {
				return slices.ContainsFunc(criticalAt[s.Node+"/"+c], func(i uint64) bool {
					return i > s.CreateIndex && i <= o.Obs.Index
				})
			}) {
				continue
			}
			at := first.at(o.Obs.Index)
			h.Events = append(h.Events, linearizability.Event{Kind: "ttl-expiry",
				Earliest: nanos(at - invalidationWindow), Latest: nanos(at), Sessions: []string{s.ID}})
		}
	}
	h.Faults = append(h.Faults, faultSpans(ix)...)
	for _, e := range ix.faults {
		if e.Fault.Kind == core.FaultServerClockStep && e.Fault.Phase == "start" {
			h.LockDelayMayBeLost = true // a server's wall clock stepped
		}
	}
	return h, len(excused)
}

// appliedTimes says when the cluster first applied each raft index: the
// first moment any server's applied index reached it (replays excluded).
// Observations are made at the instant of the apply, so this is exact.
type appliedTimes struct {
	idx   []uint64 // strictly increasing
	times []time.Duration
}

func firstApplies(ix *traceIndex) appliedTimes {
	var a appliedTimes
	for _, o := range ix.Obs {
		if o.Obs.Replay || (len(a.idx) > 0 && o.Obs.Index <= a.idx[len(a.idx)-1]) {
			continue
		}
		a.idx = append(a.idx, o.Obs.Index)
		a.times = append(a.times, o.At)
	}
	return a
}

// at is when index i was first applied (the end of the trace if never).
func (a appliedTimes) at(i uint64) time.Duration {
	k := sort.Search(len(a.idx), func(k int) bool { return a.idx[k] >= i })
	if k == len(a.idx) {
		if k == 0 {
			return 0
		}
		return a.times[k-1]
	}
	return a.times[k]
}

func nanos(d time.Duration) linearizability.Nanos { return linearizability.Nanos(max(d, 0)) }

func serfRegister(node string, st model.Health) model.Command {
	return checkRegister(node, model.SerfHealthCheckID, st)
}

// checkRegister is the catalog write that sets node's check to st: the
// leader's for serfHealth, the agent's anti-entropy for its own checks. The
// address is a stand-in (the servers write the node's gossip IP): no
// recorded request reads a node's address, so the model never compares it.
func checkRegister(node, check string, st model.Health) model.Command {
	name := "Serf Health Status"
	if check != model.SerfHealthCheckID {
		name = check
	}
	return model.Command{Register: &model.Register{Node: node, Address: node,
		Checks: []model.CheckSpec{{CheckID: check, Name: name, Status: st}}}}
}

// historyOp converts one recorded request; false for ones that carry no
// checkable information.
func historyOp(op *Op) (linearizability.Op, bool) {
	out := linearizability.Op{Call: nanos(op.CallAt), Return: nanos(op.RetAt)}
	if op.Ret != nil && op.Ret.Outcome == core.OutNotApplied {
		return out, false // it had no effect and answered nothing
	}
	if op.Ret != nil && op.Ret.Outcome == core.OutFail && op.Ret.Status == 403 {
		// An ACL refusal is decided before the state is read, so it says
		// nothing about it (acl-enforced judges it).
		return out, false
	}
	if op.Ret == nil || op.Ret.Outcome == core.OutUnknown {
		out.Unknown = true
		out.Return = out.Call
	}
	c := op.Call
	var cmd *model.Command
	switch c.Req {
	case core.ReqCreate:
		cs := *c.Create
		cs.ID = ""
		// The client sends its list as both Checks and NodeChecks
		// (workload.ApiClient.Create); the server applies Consul's fixup.
		cs.Checks, cs.NodeChecks = model.FixupSessionChecks(cs.Checks, cs.Checks)
		if cs.Behavior == "" {
			cs.Behavior = model.BehaviorRelease
		}
		cmd = &model.Command{CreateSession: &cs}
	case core.ReqDestroy:
		cmd = &model.Command{DestroySession: &model.DestroySession{ID: c.ID}}
	case core.ReqKV:
		kv := *c.KV
		cmd = &model.Command{KV: &kv}
	case core.ReqTxn:
		cmd = &model.Command{Txn: model.KVTxn(c.Txn...)}
	case core.ReqRenew:
		out.Input.Read = &linearizability.Read{Kind: linearizability.RenewSess, Session: c.ID}
	case core.ReqGet:
		out.Input.Read = &linearizability.Read{Kind: linearizability.ReadKey, Key: c.Key}
	default:
		return out, false
	}
	out.Input.Command = cmd
	if out.Unknown {
		return out, true
	}
	r := op.Ret
	switch {
	case r.Outcome == core.OutFail:
		out.Output.Error = r.Err
		if out.Output.Error == "" {
			out.Output.Error = "rejected"
		}
	case c.Req == core.ReqCreate:
		out.Output.OK, out.Output.SessionID = true, r.SessionID
	case c.Req == core.ReqGet || c.Req == core.ReqRenew:
		out.Output.OK = r.Found
		if c.Req == core.ReqGet && r.Found {
			out.Output.Entries = r.Entries
		}
	case c.Req == core.ReqTxn:
		out.Output.OK = len(r.TxnErrors) == 0
		out.Output.Entries, out.Output.TxnErrors = r.Entries, r.TxnErrors
		out.Output.LockDelayed = r.LockDelay
	default:
		out.Output.OK = r.OK || c.Req == core.ReqDestroy
		out.Output.LockDelayed = r.LockDelay
		out.Output.Entries = r.Entries // a granted acquire's holding period (S64)
	}
	return out, true
}

// faultSpans pairs fault start and end marks for the visualisation.
func faultSpans(ix *traceIndex) []linearizability.Fault {
	starts := map[int]*core.Event{}
	var out []linearizability.Fault
	for _, e := range ix.faults {
		switch e.Fault.Phase {
		case "start":
			starts[e.Fault.ID] = e
		case "end":
			if s := starts[e.Fault.ID]; s != nil {
				out = append(out, linearizability.Fault{Name: string(e.Fault.Kind), Start: nanos(s.At), End: nanos(e.At),
					Details: strings.Join(s.Fault.Targets, ",") + " " + s.Fault.Note})
			}
		}
	}
	return out
}

// lockDelaySlack widens lock-delay windows: lock-delay runs on the leader's
// clock, so allow for the server clocks' drift over the longest delay.
func lockDelaySlack(ix *traceIndex) time.Duration {
	slack := time.Second
	for _, s := range ix.hdr.Servers {
		r := ix.serverRate(s)
		slack = max(slack, time.Second+time.Duration(math.Abs(1-r)*float64(ix.hdr.Bounds.MaxLockDelay)))
	}
	return slack
}
