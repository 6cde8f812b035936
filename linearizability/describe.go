package linearizability

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/model"
)

// The descriptions below are what a person reads in the visualisation:
// operations as "verb key args → answer", states as one line per key plus
// the live sessions. Session IDs are cut to 8 characters; times are shown
// relative to the history's first instant.

func (c *checker) describeOp(input, _ any) string {
	in := input.(stepIn)
	r := in.r
	var b strings.Builder
	if r.event != nil {
		fmt.Fprintf(&b, "[%s, window %s–%s] ", r.event.Kind, c.at(r.call), c.at(r.ret))
		if len(r.event.Sessions) > 0 {
			fmt.Fprintf(&b, "invalidate %s", shortIDs(r.event.Sessions))
		} else {
			b.WriteString(describeCommand(r.cmds[0]))
		}
		if r.event.Invalidated != nil {
			fmt.Fprintf(&b, " (server reported %s)", shortIDs(r.event.Invalidated))
		}
		return b.String()
	}
	if r.kind == kindRead {
		b.WriteString(describeRead(r.read))
	} else {
		b.WriteString(describeCommand(r.cmds[0]))
	}
	b.WriteString(" → ")
	b.WriteString(describeOutput(r))
	return b.String()
}

func describeCommand(c model.Command) string {
	switch {
	case c.CreateSession != nil:
		cs := c.CreateSession
		id := short(cs.ID)
		if cs.ID == rejectedID {
			id = "(rejected)"
		}
		s := fmt.Sprintf("create session %s node=%s checks=%v lock-delay=%v behavior=%s", id, cs.Node, cs.Checks, cs.LockDelay, orDefault(string(cs.Behavior), "release"))
		if cs.TTL != "" {
			s += " ttl=" + cs.TTL
		}
		return s
	case c.DestroySession != nil:
		return "destroy session " + short(c.DestroySession.ID)
	case c.Register != nil:
		var checks []string
		for _, ch := range c.Register.Checks {
			checks = append(checks, ch.CheckID+"="+string(ch.Status))
		}
		return fmt.Sprintf("register node %s %s", c.Register.Node, strings.Join(checks, " "))
	case c.Deregister != nil:
		if c.Deregister.CheckID != "" {
			return fmt.Sprintf("deregister check %s/%s", c.Deregister.Node, c.Deregister.CheckID)
		}
		return "deregister node " + c.Deregister.Node
	case c.KV != nil:
		return describeKVOp(*c.KV)
	case c.Txn != nil:
		var ops []string
		for _, o := range c.Txn.Ops {
			ops = append(ops, describeTxnOp(o))
		}
		return "txn[" + strings.Join(ops, "; ") + "]"
	}
	return "?"
}

func describeTxnOp(o model.TxnOp) string {
	switch {
	case o.KV != nil:
		return describeKVOp(*o.KV)
	case o.Node != nil:
		return fmt.Sprintf("node %s %s", o.Node.Verb, o.Node.Node)
	case o.Service != nil:
		return fmt.Sprintf("service %s %s/%s", o.Service.Verb, o.Service.Node, o.Service.Service.ID)
	case o.Check != nil:
		s := fmt.Sprintf("check %s %s/%s", o.Check.Verb, o.Check.Node, o.Check.Check.CheckID)
		if o.Check.Check.Status != "" {
			s += "=" + string(o.Check.Check.Status)
		}
		return s
	case o.Session != nil:
		return fmt.Sprintf("session %s %s", o.Session.Verb, short(o.Session.ID))
	}
	return "?"
}

func describeKVOp(o model.KVOp) string {
	s := string(o.Verb) + " " + o.Key
	if o.Value != nil {
		s += fmt.Sprintf(" v=%q", o.Value)
	}
	if o.Flags != 0 {
		s += fmt.Sprintf(" flags=%d", o.Flags)
	}
	if o.Session != "" {
		s += " s=" + short(o.Session)
	}
	if o.Index != 0 {
		s += fmt.Sprintf(" index=%d", o.Index)
	}
	return s
}

func describeRead(rd Read) string {
	switch rd.Kind {
	case ReadSession, RenewSess:
		return fmt.Sprintf("%s %s", rd.Kind, short(rd.Session))
	}
	return fmt.Sprintf("%s %s", rd.Kind, rd.Key)
}

func describeOutput(r *rec) string {
	o := r.out
	switch {
	case r.unknown:
		return "? (outcome unknown)"
	case o.Error != "":
		return "error: " + o.Error
	case o.LockDelayed:
		return "refused for lock-delay"
	case len(o.TxnErrors) > 0:
		var es []string
		for _, e := range o.TxnErrors {
			es = append(es, fmt.Sprintf("#%d %s", e.OpIndex, e.What))
		}
		return "aborted: " + strings.Join(es, "; ")
	case o.SessionID != "":
		return short(o.SessionID)
	case r.kind == kindRead && !o.OK:
		return "not found"
	case o.Session != nil:
		return "found " + describeSession(*o.Session)
	case len(o.Entries) > 0:
		var es []string
		for _, e := range o.Entries {
			es = append(es, describeEntry(e, true))
		}
		return strings.Join(es, ", ")
	}
	return fmt.Sprint(o.OK)
}

func describeEntry(e model.KVEntry, absolute bool) string {
	holder := "free"
	if e.Session != "" {
		holder = "held by " + short(e.Session)
	}
	idx := "local"
	if absolute {
		idx = "index"
	}
	return fmt.Sprintf("%s{v=%q flags=%d lock-index=%d %s %s %d/%d}", e.Key, e.Value, e.Flags, e.LockIndex, holder, idx, e.CreateIndex, e.ModifyIndex)
}

func describeSession(s model.Session) string {
	d := fmt.Sprintf("%s(%s lock-delay=%v", short(s.ID), orDefault(string(s.Behavior), "release"), s.LockDelay)
	if s.TTL != "" {
		d += " ttl=" + s.TTL
	}
	if len(s.Checks) > 0 {
		d += fmt.Sprintf(" checks=%s:%v", s.Node, s.Checks)
	}
	return d + ")"
}

func (c *checker) describeState(state any) string {
	s := state.(*pstate)
	var lines []string
	keys := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for k := range s.m.Entries() {
			seen[k] = true
			if !yield(k) {
				return
			}
		}
		for k := range s.tr {
			if !seen[k] && !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		line := k + ": absent"
		if e, ok := s.m.Get(k); ok {
			line = describeEntry(e, false)
		}
		if issued := s.m.LockIssued(k); issued > 0 {
			line += fmt.Sprintf(" (lock-index issued up to %d)", issued)
		}
		t := s.tr[k]
		if t.L != 0 {
			line += fmt.Sprintf("; local %d is index %d", t.L, t.M)
		}
		if t.DelayTo != 0 {
			line += fmt.Sprintf("; lock-delay ends in [%s, %s]", c.at(t.DelayFrom), c.at(t.DelayTo))
		}
		lines = append(lines, line)
	}
	var sessions []string
	for _, se := range s.m.SessionList("") {
		sessions = append(sessions, describeSession(se))
	}
	if len(sessions) == 0 {
		sessions = []string{"none"}
	}
	lines = append(lines, "sessions: "+strings.Join(sessions, " "))
	return strings.Join(lines, "\n")
}

// at shows a time relative to the history's start.
func (c *checker) at(t int64) string {
	if t == math.MaxInt64 {
		return "∞"
	}
	return time.Duration(t - c.t0).String()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func shortIDs(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short(id)
	}
	return "[" + strings.Join(out, " ") + "]"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
