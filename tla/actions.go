package tla

import (
	"slices"
	"time"

	"github.com/tenurekv/tenure/model"
)

// action is one instance of a Sessions.tla action: its name and the values
// of its parameters, by parameter name (as TLC's JSON traces give them).
type action struct {
	Name string
	Args map[string]string
}

func (a action) String() string {
	s := a.Name
	if len(a.Args) == 0 {
		return s
	}
	keys := make([]string, 0, len(a.Args))
	for k := range a.Args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s += "("
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += k + "=" + a.Args[k]
	}
	return s + ")"
}

// param is one bound variable of a disjunct of Next, with the set it ranges over.
type param struct {
	name   string // e.g. "c"
	domain string // e.g. "Clients"
}

// step is what one action does from world w (whose projection is a). It
// returns the successor, the store command's result if it issued one, and
// whether the action was enabled.
type step func(r *rules, w *world, a *abs, args []int) (*world, *model.Result, bool)

// actionDef is the Go counterpart of one disjunct of Sessions.tla's Next.
type actionDef struct {
	name   string
	params []param
	run    step
}

// rules are the fixed inputs of a run.
type rules struct {
	apply    applyFunc
	maxIndex uint64
}

// value is what every write carries: with one value, a set of an existing
// key and a re-acquire by the holder change nothing (S37), as in Sessions.tla.
var value = []byte("v")

// queryService is the service every prepared query of the explorer names;
// execution is not modelled, only the query's life.
const queryService = "svc"

func domainNames(sc *scenario, domain string) []string {
	switch domain {
	case "Sessions":
		return sc.Sessions
	case "Checks":
		return sc.Checks
	case "Nodes":
		return sc.Nodes
	case "Clients":
		return sc.Clients
	case "Keys":
		return sc.Keys
	case "Healths":
		return healths
	case "Services":
		return sc.Services
	case "Queries":
		return sc.Queries
	}
	return nil
}

var healths = []string{string(model.HealthCritical), string(model.HealthPassing), string(model.HealthWarning)}

// room is the guard every store action has in Sessions.tla: index < MaxIndex.
func (r *rules) room(a *abs) bool { return a.Index < r.maxIndex }

// store runs cmd on a copy of w; a rejected command (or a false answer, for
// the verbs whose answer is a boolean) disables the action.
func (r *rules) store(w *world, cmd model.Command) (*world, *model.Result, bool) {
	n := w.clone()
	n.m = w.m.Clone()
	res := n.apply(r.apply, cmd)
	if res.Failed() || !res.OK {
		return nil, nil, false
	}
	return n, &res, true
}

func (w *world) live(s int) bool {
	_, ok := w.m.Session(w.sc.Sessions[s])
	return ok
}

func (w *world) nodeUp(n string) bool {
	_, ok := w.m.Node(n)
	return ok
}

func (w *world) clientSession(c int) string { return w.sc.ClientSession[w.sc.Clients[c]] }

func (w *world) sequencer(c, k int) model.Sequencer {
	return model.Sequencer{Key: w.sc.Keys[k], LockIndex: w.belief[c][k].LockIndex, Session: w.clientSession(c)}
}

// actions mirror Next in Sessions.tla, disjunct by disjunct, in its order.
var actions = []actionDef{
	{"CreateSession", []param{{"s", "Sessions"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		sc, s := w.sc, w.sc.Sessions[x[0]]
		if !r.room(a) || w.created[x[0]] { // an ID is never reused (S1)
			return nil, nil, false
		}
		nodeChecks, serviceChecks := sc.sessionChecks(s)
		n, res, ok := r.store(w, model.Command{CreateSession: &model.CreateSession{
			ID: s, Name: s, Node: sc.SessionNode[s], NodeChecks: nodeChecks, ServiceChecks: serviceChecks,
			LockDelay: time.Duration(sc.SessionDelay[s]) * tick,
			Behavior:  sc.SessionBehavior[s], TTL: sc.ttlString(s),
		}})
		if !ok {
			return nil, nil, false
		}
		n.created[x[0]] = true
		if ttl := time.Duration(sc.SessionTTL[s]) * tick; ttl > 0 {
			n.ttl.Reset(s, n.now, ttl/model.DefaultTTLMultiplier, model.DefaultTTLMultiplier)
		}
		return n, res, true
	}},
	{"DestroySession", []param{{"s", "Sessions"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		if !r.room(a) || !w.live(x[0]) {
			return nil, nil, false
		}
		return r.store(w, model.Command{DestroySession: &model.DestroySession{ID: w.sc.Sessions[x[0]]}})
	}},
	{"ExpireSession", []param{{"s", "Sessions"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		s := w.sc.Sessions[x[0]]
		if !r.room(a) || !w.live(x[0]) || !slices.Contains(w.ttl.Expired(w.now), s) {
			return nil, nil, false
		}
		return r.store(w, model.Command{DestroySession: &model.DestroySession{ID: s}})
	}},
	{"SetCheck", []param{{"ch", "Checks"}, {"st", "Healths"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		ch := w.sc.Checks[x[0]]
		node := w.sc.CheckNode[ch]
		// Registering a check of a deregistered node would bring the node back.
		// A check of a deregistered service is refused by the model (S55),
		// which disables the action as Sessions.tla's guard does.
		if !r.room(a) || !w.nodeUp(node) {
			return nil, nil, false
		}
		return r.store(w, model.Command{Register: &model.Register{
			Node: node, Address: nodeAddress(node),
			Checks: []model.CheckSpec{{CheckID: ch, Name: ch, Status: model.Health(healths[x[1]]), ServiceID: w.sc.CheckService[ch]}},
		}})
	}},
	{"DeregisterNode", []param{{"n", "Nodes"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		n := w.sc.Nodes[x[0]]
		if !r.room(a) || !w.nodeUp(n) {
			return nil, nil, false
		}
		return r.store(w, model.Command{Deregister: &model.Deregister{Node: n}})
	}},
	{"DeregisterService", []param{{"sv", "Services"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		sv := w.sc.Services[x[0]]
		if !r.room(a) || !a.ServiceUp[x[0]] {
			return nil, nil, false
		}
		return r.store(w, model.Command{Deregister: &model.Deregister{Node: w.sc.ServiceNode[sv], ServiceID: sv}})
	}},
	{"CreateQuery", []param{{"q", "Queries"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		q := w.sc.Queries[x[0]]
		if !r.room(a) || w.queried[x[0]] { // a query ID is never reused
			return nil, nil, false
		}
		// The model refuses a query whose session is gone (S57).
		n, res, ok := r.store(w, model.Command{Query: &model.QueryOp{Op: model.QueryCreate, Query: model.PreparedQuery{
			ID: q, Session: w.sc.QuerySession[q], Service: model.ServiceQuery{Service: queryService},
		}}})
		if !ok {
			return nil, nil, false
		}
		n.queried[x[0]] = true
		return n, res, true
	}},
	{"Acquire", []param{{"c", "Clients"}, {"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		c, k := x[0], x[1]
		key, s := w.sc.Keys[k], w.clientSession(c)
		// The leader refuses an acquire during lock-delay before raft (S22).
		if !r.room(a) || w.belief[c][k].Held || w.delays.Blocks(key, w.now) {
			return nil, nil, false
		}
		prev, had := w.m.Get(key)
		n, res, ok := r.store(w, model.Command{KV: &model.KVOp{Verb: model.KVLock, Key: key, Value: value, Session: s}})
		if !ok {
			return nil, nil, false
		}
		// A tenure starts when a free key is acquired; an acquire of a held key
		// joins the current one (with a correct store, only by the holder's session).
		if !had || prev.Session == "" {
			n.tenure[k]++
		}
		held, _ := n.m.Get(key)
		n.belief[c][k] = belief{Held: true, LockIndex: held.LockIndex, Tenure: n.tenure[k]}
		return n, res, true
	}},
	{"Release", []param{{"c", "Clients"}, {"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		c, k := x[0], x[1]
		if !r.room(a) || !w.belief[c][k].Held {
			return nil, nil, false
		}
		n, res, ok := r.store(w, model.Command{KV: &model.KVOp{Verb: model.KVUnlock, Key: w.sc.Keys[k], Value: value, Session: w.clientSession(c)}})
		if !ok {
			return nil, nil, false
		}
		n.belief[c][k] = belief{}
		return n, res, true
	}},
	{"SetKey", []param{{"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		if !r.room(a) {
			return nil, nil, false
		}
		return r.store(w, model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: w.sc.Keys[x[0]], Value: value}})
	}},
	{"DeleteKey", []param{{"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		if !r.room(a) {
			return nil, nil, false
		}
		return r.store(w, model.Command{KV: &model.KVOp{Verb: model.KVDelete, Key: w.sc.Keys[x[0]]}})
	}},
	{"Reap", nil, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		// Enabled as in Sessions.tla: some absent key still has a watermark.
		gone := false
		for k := range a.KV {
			gone = gone || (!a.KV[k].Exists && a.Issued[k] > 0)
		}
		if !gone {
			return nil, nil, false
		}
		return r.store(w, model.Command{Reap: &model.Reap{Index: w.m.Index()}})
	}},
	{"RenewSession", []param{{"s", "Sessions"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		s := w.sc.Sessions[x[0]]
		full := time.Duration(w.sc.SessionTTL[s]) * tick
		if !w.live(x[0]) || full == 0 || a.TTLLeft[x[0]] >= w.sc.SessionTTL[s] {
			return nil, nil, false
		}
		n := w.clone()
		n.ttl.Reset(s, n.now, full/model.DefaultTTLMultiplier, model.DefaultTTLMultiplier)
		return n, nil, true
	}},
	{"Tick", nil, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		if !slices.ContainsFunc(a.TTLLeft, positive) && !slices.ContainsFunc(a.DelayLeft, positive) {
			return nil, nil, false
		}
		n := w.clone()
		n.now = n.now.Add(tick)
		return n, nil, true
	}},
	{"Notice", []param{{"c", "Clients"}, {"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		c, k := x[0], x[1]
		if !w.belief[c][k].Held || w.m.CheckSequencer(w.sequencer(c, k)) == nil {
			return nil, nil, false
		}
		n := w.clone()
		n.belief[c][k] = belief{}
		return n, nil, true
	}},
	{"WriteFenced", []param{{"c", "Clients"}, {"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		c, k := x[0], x[1]
		if !w.belief[c][k].Held || w.m.CheckSequencer(w.sequencer(c, k)) != nil {
			return nil, nil, false
		}
		n := w.clone()
		n.fenced[k] = write{Writer: w.sc.Clients[c], Stale: !a.legit(c, k)}
		return n, nil, true
	}},
	{"WriteUnfenced", []param{{"c", "Clients"}, {"k", "Keys"}}, func(r *rules, w *world, a *abs, x []int) (*world, *model.Result, bool) {
		c, k := x[0], x[1]
		if !w.belief[c][k].Held {
			return nil, nil, false
		}
		n := w.clone()
		n.unfence[k] = write{Writer: w.sc.Clients[c], Stale: !a.legit(c, k)}
		return n, nil, true
	}},
}

func positive(n int) bool { return n > 0 }

// instances calls f for every parameter binding of def in the scenario.
func (def *actionDef) instances(sc *scenario, f func(args []int)) {
	args := make([]int, len(def.params))
	var rec func(i int)
	rec = func(i int) {
		if i == len(def.params) {
			f(args)
			return
		}
		for j := range domainNames(sc, def.params[i].domain) {
			args[i] = j
			rec(i + 1)
		}
	}
	rec(0)
}

// action names the instance def(args).
func (def *actionDef) action(sc *scenario, args []int) action {
	act := action{Name: def.name, Args: map[string]string{}}
	for i, p := range def.params {
		act.Args[p.name] = domainNames(sc, p.domain)[args[i]]
	}
	return act
}
