package tla

import (
	"fmt"
	"time"

	"github.com/tenurekv/tenure/model"
)

// epoch is the virtual leader clock's zero; only differences matter.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// world is one concrete state the explorer reached: the replicated store
// (model.State), the leader's memories beside it (lock-delays, TTL
// deadlines, its clock), and what Sessions.tla adds around the store:
// which sessions were ever created, clients' beliefs, the ghost tenures and
// the two resources. Slices are indexed like abs's.
type world struct {
	sc      *scenario
	base    uint64 // raft index after the catalog setup: abstract index 0
	m       *model.State
	now     time.Time
	delays  model.LockDelays
	ttl     model.TTLDeadlines
	created []bool
	queried []bool // prepared queries ever created
	tenure  []uint64
	belief  [][]belief
	fenced  []write
	unfence []write
}

// newWorld registers the scenario's nodes with their services and their
// checks passing, as Sessions.tla's Init has them, through the model.
func newWorld(sc *scenario) (*world, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	m := model.New()
	for _, n := range sc.Nodes {
		reg := model.Register{Node: n, Address: nodeAddress(n)}
		for _, sv := range sc.Services {
			if sc.ServiceNode[sv] == n {
				reg.Services = append(reg.Services, model.ServiceSpec{ID: sv, Service: sv})
			}
		}
		for _, ch := range sc.Checks {
			if sc.CheckNode[ch] == n {
				reg.Checks = append(reg.Checks, model.CheckSpec{CheckID: ch, Name: ch, Status: model.HealthPassing, ServiceID: sc.CheckService[ch]})
			}
		}
		if res := m.Apply(m.Index()+1, model.Command{Register: &reg}); res.Failed() {
			return nil, fmt.Errorf("register node %s: %v", n, res.Err)
		}
	}
	w := &world{
		sc: sc, base: m.Index(), m: m, now: epoch,
		created: make([]bool, len(sc.Sessions)),
		queried: make([]bool, len(sc.Queries)),
		tenure:  make([]uint64, len(sc.Keys)),
		belief:  make([][]belief, len(sc.Clients)),
		fenced:  make([]write, len(sc.Keys)),
		unfence: make([]write, len(sc.Keys)),
	}
	for c := range w.belief {
		w.belief[c] = make([]belief, len(sc.Keys))
	}
	for k := range sc.Keys {
		w.fenced[k] = write{Writer: none}
		w.unfence[k] = write{Writer: none}
	}
	return w, nil
}

func nodeAddress(n string) string { return "addr-" + n }

// clone copies the world but shares the model state, which is never changed
// in place: a store action clones it first (see rules.store). LockDelays and
// TTLDeadlines have no Clone, so their live entries are re-armed at the same
// end times.
func (w *world) clone() *world {
	c := &world{
		sc: w.sc, base: w.base, m: w.m, now: w.now,
		created: append([]bool(nil), w.created...),
		queried: append([]bool(nil), w.queried...),
		tenure:  append([]uint64(nil), w.tenure...),
		belief:  make([][]belief, len(w.belief)),
		fenced:  append([]write(nil), w.fenced...),
		unfence: append([]write(nil), w.unfence...),
	}
	for i, row := range w.belief {
		c.belief[i] = append([]belief(nil), row...)
	}
	for _, k := range w.sc.Keys {
		if r := w.delays.Remaining(k, w.now); r > 0 {
			c.delays.Arm(k, w.now, r)
		}
	}
	for _, s := range w.sc.Sessions {
		if d, ok := w.ttl.Deadline(s); ok {
			full := time.Duration(w.sc.SessionTTL[s]) * tick
			c.ttl.Reset(s, d.Add(-full), full, 1)
		}
	}
	return c
}

// ticksLeft is d in whole ticks, rounded up, and 0 when d <= 0.
func ticksLeft(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + tick - 1) / tick)
}

// abs projects the world onto Sessions.tla's variables.
func (w *world) abs() *abs {
	sc := w.sc
	a := &abs{
		sc:          sc,
		Index:       w.m.Index() - w.base,
		Floor:       w.m.LockFloor(),
		NodeUp:      make([]bool, len(sc.Nodes)),
		ServiceUp:   make([]bool, len(sc.Services)),
		QueryState:  make([]string, len(sc.Queries)),
		CheckStatus: make([]string, len(sc.Checks)),
		SessState:   make([]string, len(sc.Sessions)),
		TTLLeft:     make([]int, len(sc.Sessions)),
		KV:          make([]kvRec, len(sc.Keys)),
		Issued:      make([]uint64, len(sc.Keys)),
		DelayLeft:   make([]int, len(sc.Keys)),
		Tenure:      append([]uint64(nil), w.tenure...),
		Belief:      make([][]belief, len(w.belief)),
		Fenced:      append([]write(nil), w.fenced...),
		Unfenced:    append([]write(nil), w.unfence...),
	}
	for i, n := range sc.Nodes {
		_, a.NodeUp[i] = w.m.Node(n)
	}
	for i, sv := range sc.Services {
		_, a.ServiceUp[i] = w.m.Service(model.ServiceKey{Node: sc.ServiceNode[sv], ServiceID: sv})
	}
	for i, q := range sc.Queries {
		_, live := w.m.Query(q)
		switch {
		case live:
			a.QueryState[i] = sessLive
		case w.queried[i]:
			a.QueryState[i] = sessDead
		default:
			a.QueryState[i] = sessUnborn
		}
	}
	for i, ch := range sc.Checks {
		a.CheckStatus[i] = checkGone
		if c, ok := w.m.Check(model.CheckKey{Node: sc.CheckNode[ch], CheckID: ch}); ok {
			a.CheckStatus[i] = string(c.Status)
		}
	}
	for i, s := range sc.Sessions {
		_, live := w.m.Session(s)
		switch {
		case live:
			a.SessState[i] = sessLive
			if d, ok := w.ttl.Deadline(s); ok {
				a.TTLLeft[i] = ticksLeft(d.Sub(w.now))
			}
		case w.created[i]:
			a.SessState[i] = sessDead
		default:
			a.SessState[i] = sessUnborn
		}
	}
	for i, k := range sc.Keys {
		a.KV[i] = kvRec{Session: none}
		if e, ok := w.m.Get(k); ok {
			a.KV[i] = kvRec{Exists: true, LockIndex: e.LockIndex, Session: e.Session, ModifyIndex: e.ModifyIndex - w.base}
			if e.Session == "" {
				a.KV[i].Session = none
			}
		}
		a.Issued[i] = w.m.LockIssued(k)
		a.DelayLeft[i] = ticksLeft(w.delays.Remaining(k, w.now))
	}
	for c, row := range w.belief {
		a.Belief[c] = append([]belief(nil), row...)
	}
	return a
}

// apply runs one store command through the explorer's apply function at the
// next raft index and records in the leader's memories what it reports:
// invalidated sessions lose their TTL deadline, and their keys' lock-delays
// are armed at the current time (S22).
func (w *world) apply(ap applyFunc, cmd model.Command) model.Result {
	var res model.Result
	w.m, res = ap(w.m, w.m.Index()+1, cmd)
	if res.Failed() {
		return res
	}
	for _, id := range res.Invalidated {
		w.ttl.Remove(id)
	}
	for _, ld := range res.LockDelays {
		w.delays.Arm(ld.Key, w.now, ld.Delay)
	}
	return res
}

// applyFunc applies one command to a state and returns the state to keep
// (m itself, or a broken replacement); the explorer uses (*State).Apply
// unless a test substitutes a broken one.
type applyFunc func(m *model.State, index uint64, cmd model.Command) (*model.State, model.Result)

// modelApply is the real transition function.
func modelApply(m *model.State, index uint64, cmd model.Command) (*model.State, model.Result) {
	return m, m.Apply(index, cmd)
}
