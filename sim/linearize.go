package sim

import (
	"math"
	"slices"
	"strings"
	"time"

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

// History turns a trace into the client-observed history the
// linearizability checker reads: every client request, plus the invalidations
// the servers made on their own (TTL expiry, serfHealth changes), each placed
// in a window ending at the first apply any server was seen to make.
func History(events []Event) linearizability.History {
	ix := newIndex(events)
	var h linearizability.History
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
		if lop, ok := historyOp(op); ok {
			lop.Client = clientID(op.Client)
			h.Ops = append(h.Ops, lop)
		}
		if op.Call.Req == ReqDestroy {
			if t, ok := destroyCall[op.Call.ID]; !ok || op.CallAt < t {
				destroyCall[op.Call.ID] = op.CallAt
			}
		}
	}
	// serfHealth changes, once per raft index at which they happened.
	type checkChange struct {
		node   string
		status model.Health
		index  uint64
	}
	seenCheck := map[checkChange]bool{}
	critical := map[string]time.Duration{} // node → when it last went critical
	seenGone := map[string]bool{}
	lastSerf := time.Duration(-1)
	for _, o := range ix.obs {
		if o.Obs.Replay {
			continue
		}
		for _, nc := range slices.Sorted(mapKeysOf(o.Obs.Checks)) {
			st := o.Obs.Checks[nc]
			node, check, _ := strings.Cut(nc, "/")
			if check != model.SerfHealthCheckID {
				continue
			}
			cc := checkChange{node, st, o.Obs.Index}
			if seenCheck[cc] {
				continue
			}
			seenCheck[cc] = true
			if st == model.HealthCritical {
				critical[node] = o.At
			}
			cmd := serfRegister(node, st)
			// Successive changes keep their log order even when seen at
			// the same instant: each is placed at least 1ns after the last.
			latest := max(o.At, lastSerf+1)
			earliest := max(latest-invalidationWindow, lastSerf+1)
			lastSerf = latest
			h.Events = append(h.Events, linearizability.Event{Kind: "serfHealth-" + string(st),
				Earliest: nanos(earliest), Latest: nanos(latest), Command: &cmd})
		}
		for _, s := range o.Obs.GoneSess {
			if seenGone[s.ID] {
				continue
			}
			seenGone[s.ID] = true
			if t, ok := destroyCall[s.ID]; ok && t <= o.At {
				continue // the client's destroy is in the history
			}
			if t, ok := critical[s.Node]; ok && t == o.At && slices.Contains(s.Checks, model.SerfHealthCheckID) {
				continue // the serfHealth event invalidates it
			}
			h.Events = append(h.Events, linearizability.Event{Kind: "ttl-expiry",
				Earliest: nanos(o.At - invalidationWindow), Latest: nanos(o.At), Sessions: []string{s.ID}})
		}
	}
	h.Faults = append(h.Faults, faultSpans(ix)...)
	// Lock-delay runs on the leader's clock: allow for the server clocks'
	// drift over the longest delay, and for wall-clock steps.
	slack := time.Second
	for _, s := range ix.hdr.Servers {
		r := ix.serverRate(s)
		slack = max(slack, time.Second+time.Duration(math.Abs(1-r)*float64(ix.hdr.Bounds.MaxLockDelay)))
	}
	for _, e := range ix.faults {
		if e.Fault.Kind == FaultClockSkew && e.Fault.Phase == "start" {
			h.LockDelayMayBeLost = true // a server's wall clock stepped
		}
	}
	h.LockDelaySlack = nanos(slack)
	return h
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func nanos(d time.Duration) linearizability.Nanos { return linearizability.Nanos(max(d, 0)) }

func serfRegister(node string, st model.Health) model.Command {
	return model.Command{Register: &model.Register{Node: node, Address: node + ":" + httpPort,
		Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Name: "Serf Health Status", Status: st}}}}
}

// historyOp converts one recorded request; false for ones that carry no
// checkable information.
func historyOp(op *Op) (linearizability.Op, bool) {
	out := linearizability.Op{Call: nanos(op.CallAt), Return: nanos(op.RetAt)}
	if op.Ret == nil || op.Ret.Outcome == OutUnknown {
		out.Unknown = true
		out.Return = out.Call
	}
	c := op.Call
	var cmd *model.Command
	switch c.Req {
	case ReqCreate:
		cs := *c.Create
		cs.ID = ""
		if cs.Checks == nil {
			cs.Checks = []string{}
		}
		if cs.Behavior == "" {
			cs.Behavior = model.BehaviorRelease
		}
		cmd = &model.Command{CreateSession: &cs}
	case ReqDestroy:
		cmd = &model.Command{DestroySession: &model.DestroySession{ID: c.ID}}
	case ReqKV:
		kv := *c.KV
		cmd = &model.Command{KV: &kv}
	case ReqTxn:
		cmd = &model.Command{Txn: &model.Txn{Ops: slices.Clone(c.Txn)}}
	case ReqRenew:
		out.Input.Read = &linearizability.Read{Kind: linearizability.RenewSess, Session: c.ID}
	case ReqGet:
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
	case r.Outcome == OutFail:
		out.Output.Error = r.Err
		if out.Output.Error == "" {
			out.Output.Error = "rejected"
		}
	case c.Req == ReqCreate:
		out.Output.OK, out.Output.SessionID = true, r.SessionID
	case c.Req == ReqGet || c.Req == ReqRenew:
		out.Output.OK = r.Found
		if c.Req == ReqGet && r.Found {
			out.Output.Entries = r.Entries
		}
	case c.Req == ReqTxn:
		out.Output.OK = len(r.TxnErrors) == 0
		out.Output.Entries, out.Output.TxnErrors = r.Entries, r.TxnErrors
		out.Output.LockDelayed = r.LockDelay
	default:
		out.Output.OK = r.OK || c.Req == ReqDestroy
		out.Output.LockDelayed = r.LockDelay
	}
	return out, true
}

// faultSpans pairs fault start and end marks for the visualisation.
func faultSpans(ix *traceIndex) []linearizability.Fault {
	starts := map[int]*Event{}
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
