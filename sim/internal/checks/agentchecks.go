package checks

import (
	"slices"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// checkQueryBound (S58, S15): a prepared query bound to a session never
// outlives it. Every applied entry on every server (replays and restores
// included: each is a state the server served) must leave no query whose
// session is gone; an entry that removes a session must delete its queries
// itself, not a later one. A query the entry deleted while its session
// lives on is not this check's business.
func checkQueryBound(ix *traceIndex) []Violation {
	var out []Violation
	for _, o := range ix.Obs {
		// What the check is exercised by: queries whose session went,
		// deleted with it (or, on a broken server, left behind).
		for _, sess := range o.Obs.GoneQueries {
			if sess != "" {
				ix.judge(1)
			}
		}
		ix.judge(len(o.Obs.QueryOrphans))
		for _, q := range o.Obs.QueryOrphans {
			out = append(out, violation(o.At, "%s: after index %d prepared query %s is bound to a session that no longer exists (S58)", o.Server, o.Obs.Index, q))
		}
	}
	return out
}

// blockingFault reports whether a fault may keep node's agent from
// syncing its checks to the catalog, or the catalog from taking the write:
// every fault on the servers or the pool's links, and a client fault on
// node's host. Clock faults, the resources' slow link, an injected
// serfHealth false positive and a fault that stops only the client's
// process (its targets leave the agent out) do not.
func blockingFault(f *core.FaultMark, node string) bool {
	switch f.Kind {
	case core.FaultClientClockRate, core.FaultSlowLink, core.FaultServerClockStep, core.FaultFalsePositive:
		return false
	case core.FaultClientPause, core.FaultClientCrash, core.FaultClientPartition, core.FaultSlowAgent:
		return slices.Contains(f.Targets, node)
	}
	return true
}

// blockingSpans lists the faults that may block node's agent, as
// [start, end] spans (end < 0: never healed).
func blockingSpans(ix *traceIndex, node string) []interval {
	var out []interval
	for _, f := range ix.faultSpans() {
		if blockingFault(f.Start.Fault, node) {
			out = append(out, interval{Start: f.Start.At, End: f.End})
		}
	}
	return out
}

// checkAgentCheckExpiry (S12, S56): a session bound to an agent TTL check
// its client stopped passing is invalidated in time. For every pass (or the
// registration) of a client's check that certainly reached the agent, the
// check expires TTL after its return unless the client sent another pass
// by then. If the client sent none until the deadline, every session bound
// to that check that existed at the expiry must be gone by it:
//
//   - with no fault that may block the agent's sync (blockingFault) from
//     Election before the expiry to the deadline, expiry +
//     Bounds.AgentSyncQuiet + Slack: the agent's partial sync follows the
//     status change at once (AgentSyncQuiet is margin for a sync under
//     way), the leader in place applies it, and the same entry
//     invalidates the sessions;
//   - otherwise, from the later of the expiry and the end of the last such
//     fault plus Election, + AgentSync + Slack (a sync that failed during
//     the fault is retried within AgentSync): at most Bounds.CheckExpiry
//     after the pass when the faults ended before it.
//
// A pass after the expiry but before the deadline may revive the check
// before the agent could sync the critical status (as in Consul, the
// catalog then never sees it): no demand. A fault still open at the end,
// such as a crash of the agent's host, leaves the check passing in the
// catalog for good: no demand either (serfHealth covers that host).
func checkAgentCheckExpiry(ix *traceIndex) []Violation {
	b := ix.hdr.Bounds
	if b.AgentCheckTTL <= 0 {
		return nil
	}
	createdAt, goneAt := map[string]time.Duration{}, map[string]time.Duration{}
	for _, o := range ix.Obs {
		for _, s := range o.Obs.NewSess {
			if t, ok := createdAt[s.ID]; !ok || o.At < t {
				createdAt[s.ID] = o.At
			}
		}
		for _, s := range o.Obs.GoneSess {
			if t, ok := goneAt[s.ID]; !ok || o.At < t {
				goneAt[s.ID] = o.At
			}
		}
	}
	bound := boundSessions(ix, core.AgentCheckID)
	passes := map[string][]*Op{}
	for _, op := range ix.ops {
		if (op.Call.Req == core.ReqCheckPass || op.Call.Req == core.ReqCheckRegister) && !op.notApplied() {
			passes[op.Client] = append(passes[op.Client], op)
		}
	}
	var out []Violation
	for _, ci := range ix.hdr.Clients {
		ttl := ix.hdr.Groups[ci.Group].Config.AgentCheck
		if ttl <= 0 {
			continue
		}
		spans := blockingSpans(ix, ci.Agent)
		ps := passes[ci.Name]
		for i, p := range ps {
			if !p.OK() {
				continue
			}
			expiry := p.RetAt + ttl
			next := time.Duration(1 << 62)
			if i+1 < len(ps) {
				next = ps[i+1].CallAt
			}
			if next <= expiry {
				continue
			}
			deadline, ok := expiryDeadline(b, spans, expiry)
			if !ok || next <= deadline || ix.end < deadline {
				continue
			}
			for _, s := range bound[ci.Agent] {
				c, made := createdAt[s.ID]
				if !made || c > expiry {
					continue
				}
				ix.judge(1)
				if g, gone := goneAt[s.ID]; gone && g <= deadline {
					continue
				}
				out = append(out, violation(deadline, "session %s bound to %s's agent TTL check (TTL %v) not invalidated by %v: %s last passed it at %v (expiry %v) and not again until %v",
					s.ID, ci.Agent, ttl, deadline, ci.Name, p.RetAt, expiry, fmtNext(next)))
			}
		}
	}
	return out
}

// expiryDeadline is when the sessions bound to a check that expired at
// expiry must be gone, given the faults that may block its agent (see
// checkAgentCheckExpiry); false if one of them never healed.
func expiryDeadline(b core.Bounds, spans []interval, expiry time.Duration) (time.Duration, bool) {
	quiet := expiry + b.AgentSyncQuiet + b.Slack
	overlaps := func(iv interval, from, to time.Duration) bool {
		return iv.Start <= to && (iv.End < 0 || iv.End >= from)
	}
	deadline := quiet
	for changed := true; changed; {
		changed = false
		for _, iv := range spans {
			if !overlaps(iv, expiry-b.Election, deadline) {
				continue
			}
			if iv.End < 0 {
				return 0, false
			}
			if d := iv.End + b.Election + b.AgentSync + b.Slack; d > deadline {
				deadline, changed = d, true
			}
		}
	}
	return deadline, true
}

func fmtNext(next time.Duration) string {
	if next >= 1<<62 {
		return "the end"
	}
	return next.String()
}
