package checks

import (
	"iter"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// Op is a client request paired with its outcome. Ret is nil while the
// request never returned (the run ended first).
type Op struct {
	Client string
	Call   *core.Call
	Ret    *core.Ret
	CallAt time.Duration
	RetAt  time.Duration
}

// Done reports whether the op returned with a definite outcome.
func (o *Op) Done() bool { return o.Ret != nil && o.Ret.Outcome != core.OutUnknown }

// notApplied reports whether the op certainly took no effect: refused, or
// never taken by a leader.
func (o *Op) notApplied() bool {
	return o.Ret != nil && (o.Ret.Outcome == core.OutFail || o.Ret.Outcome == core.OutNotApplied)
}

// OK reports a definite success.
func (o *Op) OK() bool { return o.Ret != nil && o.Ret.Outcome == core.OutOK }

// writesKey reports whether the op may change key.
func (o *Op) writesKey(key string) bool {
	if o.Call.KV != nil && o.Call.KV.Key == key && o.Call.KV.Verb.IsWrite() {
		return true
	}
	for _, op := range o.Call.Txn {
		if op.Verb.IsWrite() && (op.Key == key || (op.Verb == model.KVDeleteTree && len(key) >= len(op.Key) && key[:len(op.Key)] == op.Key)) {
			return true
		}
	}
	return false
}

// obsAt is a state observation with its time and server.
type obsAt struct {
	Server string
	At     time.Duration
	Obs    *core.StateObs
}

// serverInc names one incarnation of a server; each starts from an empty
// state, so checks that follow a server's state keep one book per
// incarnation.
type serverInc struct {
	server string
	n      int
}

// inc is the server incarnation that made o.
func (o obsAt) inc() serverInc { return serverInc{o.Server, o.Obs.Incarnation} }

// goneHolders yields each key change of o whose holder before the change
// is a session that o itself removed, with that session. It is the one
// place that pairs an invalidation with the keys it touched, for the
// arming reconstruction, the behaviour check and holdings.
func (o obsAt) goneHolders() iter.Seq2[core.KeyChange, model.Session] {
	return func(yield func(core.KeyChange, model.Session) bool) {
		if len(o.Obs.GoneSess) == 0 || o.Obs.Restored {
			return
		}
		for _, kc := range o.Obs.Keys {
			if kc.Before == nil || kc.Before.Session == "" {
				continue
			}
			s, ok := o.goneSession(kc.Before.Session)
			if ok && !yield(kc, s) {
				return
			}
		}
	}
}

// goneSession reports whether o removed session id, and that session.
func (o obsAt) goneSession(id string) (model.Session, bool) {
	for _, s := range o.Obs.GoneSess {
		if s.ID == id {
			return s, true
		}
	}
	return model.Session{}, false
}

// interval is a half-open span of virtual time; End < 0 means still open.
type interval struct{ Start, End time.Duration }

func (iv interval) contains(t time.Duration) bool {
	return iv.Start <= t && (iv.End < 0 || t < iv.End)
}

// faultSpan is one injected fault from its start mark to the time it
// healed; End is -1 for one that never did.
type faultSpan struct {
	Start *core.Event
	End   time.Duration
}

// faultSpans pairs each fault's start mark with its end. A fault with no
// end mark never healed, and neither did a client crash: its end mark
// closes the injection window, while the crash itself is for good.
func (ix *traceIndex) faultSpans() []faultSpan {
	var out []faultSpan
	starts := map[int]*core.Event{}
	for _, e := range ix.faults {
		switch e.Fault.Phase {
		case "start":
			starts[e.Fault.ID] = e
		case "end":
			if s := starts[e.Fault.ID]; s != nil {
				delete(starts, e.Fault.ID)
				end := e.At
				if s.Fault.Kind == core.FaultClientCrash {
					end = -1
				}
				out = append(out, faultSpan{Start: s, End: end})
			}
		}
	}
	for _, s := range starts {
		out = append(out, faultSpan{Start: s, End: -1})
	}
	return out
}

// traceIndex is a trace taken apart for the checks.
type traceIndex struct {
	hdr    *core.RunHeader
	events []core.Event
	ops    []*Op
	byID   map[int]*Op
	Obs    []obsAt               // every observation, in trace order
	Leader map[string][]interval // leadership spans per server
	writes []*core.Event
	faults []*core.Event
	// liveness is when the liveness phase began; -1 if it never did.
	liveness time.Duration
	excluded map[string]bool
	crashes  map[string][]time.Duration
	end      time.Duration
	steps    map[string][]clockStep // wall-clock steps per server
	// judged counts the observations the running check judged (judge);
	// check.apply resets and reads it.
	judged int
}

// judge records that the running check judged n more observations.
func (ix *traceIndex) judge(n int) { ix.judged += n }

func NewIndex(events []core.Event) *traceIndex {
	ix := &traceIndex{
		events: events, byID: map[int]*Op{}, Leader: map[string][]interval{},
		liveness: -1, excluded: map[string]bool{}, crashes: map[string][]time.Duration{},
	}
	for i := range events {
		e := &events[i]
		ix.end = max(ix.end, e.At)
		switch e.Kind {
		case core.KindRun:
			ix.hdr = e.Run
		case core.KindCall:
			op := &Op{Client: e.Node, Call: e.Call, CallAt: e.At, RetAt: -1}
			ix.ops = append(ix.ops, op)
			ix.byID[e.Call.Op] = op
		case core.KindRet:
			if op := ix.byID[e.Ret.Op]; op != nil {
				op.Ret, op.RetAt = e.Ret, e.At
			}
		case core.KindState:
			ix.Obs = append(ix.Obs, obsAt{Server: e.Node, At: e.At, Obs: e.State})
		case core.KindLeader:
			spans := ix.Leader[e.Node]
			open := len(spans) > 0 && spans[len(spans)-1].End < 0
			switch {
			case *e.Leader && !open:
				ix.Leader[e.Node] = append(spans, interval{Start: e.At, End: -1})
			case !*e.Leader && open:
				spans[len(spans)-1].End = e.At
			}
		case core.KindWrite:
			ix.writes = append(ix.writes, e)
		case core.KindFault:
			ix.faults = append(ix.faults, e)
		case core.KindNote:
			switch {
			case e.Msg == core.NoteLiveness:
				ix.liveness = e.At
			case len(e.Msg) > len(core.NoteExcludePrefix) && e.Msg[:len(core.NoteExcludePrefix)] == core.NoteExcludePrefix:
				ix.excluded[e.Msg[len(core.NoteExcludePrefix):]] = true
			case len(e.Msg) > len(core.NoteCrashPrefix) && e.Msg[:len(core.NoteCrashPrefix)] == core.NoteCrashPrefix:
				s := e.Msg[len(core.NoteCrashPrefix):]
				ix.crashes[s] = append(ix.crashes[s], e.At)
			}
		}
	}
	if ix.hdr == nil {
		ix.hdr = &core.RunHeader{}
	}
	ix.steps = clockSteps(ix)
	return ix
}

// leaderAt reports whether server led at t.
func (ix *traceIndex) leaderAt(server string, t time.Duration) bool {
	for _, iv := range ix.Leader[server] {
		if iv.contains(t) {
			return true
		}
	}
	return false
}

// leaderSince returns the start of server's leadership span containing t.
func (ix *traceIndex) leaderSince(server string, t time.Duration) (time.Duration, bool) {
	for _, iv := range ix.Leader[server] {
		if iv.contains(t) {
			return iv.Start, true
		}
	}
	return 0, false
}

// ledDuring reports whether server led at some time in [a, b].
func (ix *traceIndex) ledDuring(server string, a, b time.Duration) bool {
	for _, iv := range ix.Leader[server] {
		if iv.Start <= b && (iv.End < 0 || iv.End >= a) {
			return true
		}
	}
	return false
}

// soleLeader reports whether server was the only leader throughout [a, b]:
// it led from before a until after b and no other server led at any time in
// [a, b].
func (ix *traceIndex) soleLeader(server string, a, b time.Duration) bool {
	if _, ok := ix.leaderSince(server, a); !ok || !ix.leaderAt(server, b) {
		return false
	}
	for s, spans := range ix.Leader {
		if s == server {
			continue
		}
		for _, iv := range spans {
			if iv.Start <= b && (iv.End < 0 || iv.End > a) {
				return false
			}
		}
	}
	return true
}

// serverRate is a server's clock rate from the header (1 if unknown).
func (ix *traceIndex) serverRate(server string) float64 {
	if c, ok := ix.hdr.Clocks[server]; ok && c.Rate > 0 {
		return c.Rate
	}
	return 1
}

// holding is one holder's span on a key, by the earliest time any server
// applied its start and its end (the commit times, give or take a heartbeat).
type holding struct {
	Seq        model.Sequencer
	Start, End time.Duration // End < 0: never observed to end
}

// holdings rebuilds every key's holders from the servers' observations.
func (ix *traceIndex) Holdings() map[model.Sequencer]*holding {
	out := map[model.Sequencer]*holding{}
	for _, o := range ix.Obs {
		if o.Obs.Replay {
			continue
		}
		for _, kc := range o.Obs.Keys {
			if kc.Before != nil && kc.Before.Session != "" {
				old := kc.Before.Sequencer()
				if kc.After == nil || kc.After.Sequencer() != old {
					t := out[old]
					if t == nil {
						t = &holding{Seq: old, Start: o.At, End: -1}
						out[old] = t
					}
					if t.End < 0 || o.At < t.End {
						t.End = o.At
					}
				}
			}
			if kc.After != nil && kc.After.Session != "" {
				seq := kc.After.Sequencer()
				t := out[seq]
				if t == nil {
					out[seq] = &holding{Seq: seq, Start: o.At, End: -1}
				} else if o.At < t.Start {
					t.Start = o.At
				}
			}
		}
		// A session's removal ends its holdings even if a broken server left
		// the keys pointing at it (non-atomic invalidation).
		if len(o.Obs.GoneSess) == 0 {
			continue
		}
		for _, t := range out {
			if _, gone := o.goneSession(t.Seq.Session); gone && (t.End < 0 || o.At < t.End) && t.Start <= o.At {
				t.End = o.At
			}
		}
	}
	return out
}

// clockStep is a wall-clock step a server-clock-step fault made,
// undone when the fault ended.
type clockStep struct {
	start, end time.Duration
	by         time.Duration
}

// clockSteps returns every server's steps, so that a server's elapsed time
// between two instants can be known.
func clockSteps(ix *traceIndex) map[string][]clockStep {
	param := map[int]time.Duration{}
	for _, f := range ix.hdr.Faults {
		param[f.ID] = f.Param
	}
	starts := map[int]*core.Event{}
	out := map[string][]clockStep{}
	for _, e := range ix.faults {
		if e.Fault.Kind != core.FaultServerClockStep {
			continue
		}
		switch s := starts[e.Fault.ID]; {
		case e.Fault.Phase == "start" && len(e.Fault.Targets) == 1:
			starts[e.Fault.ID] = e
		case e.Fault.Phase == "end" && s != nil:
			// Every fault ends before the liveness phase.
			out[s.Fault.Targets[0]] = append(out[s.Fault.Targets[0]], clockStep{start: s.At, end: e.At, by: param[e.Fault.ID]})
		}
	}
	return out
}

// serverElapsed is how much server's clock advanced from virtual a to b:
// its rate, plus any wall-clock step it took in between.
func (ix *traceIndex) serverElapsed(server string, a, b time.Duration) time.Duration {
	d := time.Duration(float64(b-a) * ix.serverRate(server))
	for _, s := range ix.steps[server] {
		in := func(t time.Duration) bool { return s.start <= t && t < s.end }
		if in(b) && !in(a) {
			d += s.by
		} else if in(a) && !in(b) {
			d -= s.by
		}
	}
	return d
}
