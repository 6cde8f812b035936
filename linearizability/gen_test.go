package linearizability

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tenurekv/tenure/model"
)

// genConfig shapes a generated history.
type genConfig struct {
	Seed    uint64
	Clients int
	Keys    int
	Ops     int // client operations
	// UnknownRate is the fraction of client operations whose reply is lost;
	// half of those take effect, half never reach the state machine.
	UnknownRate float64
	// EventEvery is the mean gap between server-initiated invalidations; 0
	// means none.
	EventEvery time.Duration
	// CatalogTxns makes half the txns carry a catalog or session op (S68,
	// S69). Off, the generator draws what it drew before they existed, so
	// the seeds other tests rely on keep their histories.
	CatalogTxns bool
}

// applied is one command in the order the generator's server applied it.
type applied struct {
	index uint64
	cmd   model.Command
	res   model.Result
}

// generate runs a random workload through the model, as a correct server
// would: each operation takes effect at an instant drawn inside its
// [call, return] window, in instant order, with lock-delay decided on that
// instant. The history is therefore linearizable by construction, with
// realistic overlap: every client has one operation in flight, each lasting
// 0.5-5 ms. It returns the history and the applied commands in order.
func generate(cfg genConfig) (History, []applied) {
	g := &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6c696e)), st: model.New(), idx: 1}
	g.setup()
	for c := 0; c < cfg.Clients; c++ {
		g.clients = append(g.clients, &genClient{id: c, seen: map[string]uint64{}, held: map[string]uint64{}})
		g.schedule(g.clients[c], epoch+g.dur(0, 2*time.Millisecond))
	}
	if cfg.EventEvery > 0 {
		g.scheduleEvent(epoch + g.dur(0, 2*cfg.EventEvery))
	}
	for g.q.Len() > 0 {
		p := heap.Pop(&g.q).(*pendingOp)
		if p.client == nil {
			g.fireEvent(p.point)
			continue
		}
		g.complete(p)
		if g.issued < cfg.Ops {
			g.schedule(p.client, int64(p.op.Return)+g.dur(0, 2*time.Millisecond))
		}
	}
	slices.SortStableFunc(g.h.Ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	return g.h, g.log
}

// epoch is synctest's virtual start (2000-01-01 UTC), so times are large.
const epoch = int64(946684800) * int64(time.Second)

type generator struct {
	cfg     genConfig
	rng     *rand.Rand
	st      *model.State
	idx     uint64
	delays  model.LockDelays
	clients []*genClient
	q       opQueue
	h       History
	log     []applied
	issued  int
	nextID  int
	live    []string // sessions a TTL-like event may pick
}

type genClient struct {
	id      int
	session string
	seen    map[string]uint64 // last ModifyIndex read per key
	held    map[string]uint64 // keys this client believes it holds, with LockIndex
}

type pendingOp struct {
	point  int64 // the instant the operation takes effect
	client *genClient
	op     Op
	effect bool // false: lost before reaching the server
}

type opQueue []*pendingOp

func (q opQueue) Len() int           { return len(q) }
func (q opQueue) Less(i, j int) bool { return q[i].point < q[j].point }
func (q opQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *opQueue) Push(x any)        { *q = append(*q, x.(*pendingOp)) }
func (q *opQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func (g *generator) setup() {
	g.h.Setup = []model.Command{
		{Register: &model.Register{Node: "n1", Address: "10.0.0.1", Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}}}},
		{Register: &model.Register{Node: "n2", Address: "10.0.0.2", Checks: []model.CheckSpec{{CheckID: model.SerfHealthCheckID, Status: model.HealthPassing}, {CheckID: "web", Status: model.HealthPassing}}}},
	}
	for _, c := range g.h.Setup {
		g.st.Apply(g.idx, c)
		g.idx++
	}
}

func (g *generator) dur(lo, hi time.Duration) int64 {
	return int64(lo) + g.rng.Int64N(int64(hi-lo)+1)
}

func (g *generator) key() string { return fmt.Sprintf("k%02d", g.rng.IntN(g.cfg.Keys)) }

func (g *generator) value() []byte {
	if g.rng.IntN(4) == 0 {
		return nil
	}
	return fmt.Appendf(nil, "v%d", g.rng.IntN(1000))
}

// schedule draws the client's next operation, called at call.
func (g *generator) schedule(c *genClient, call int64) {
	g.issued++
	in := g.pick(c)
	d := g.dur(500*time.Microsecond, 5*time.Millisecond)
	p := &pendingOp{client: c, point: call + g.rng.Int64N(d+1), effect: true,
		op: Op{Client: c.id, Call: Nanos(call), Return: Nanos(call + d), Input: in}}
	if g.rng.Float64() < g.cfg.UnknownRate {
		p.op.Unknown = true
		p.effect = g.rng.IntN(2) == 0
	}
	heap.Push(&g.q, p)
}

// pick chooses what c does next from what c knows.
func (g *generator) pick(c *genClient) Input {
	cmd := func(c model.Command) Input { return Input{Command: &c} }
	kv := func(o model.KVOp) Input { return cmd(model.Command{KV: &o}) }
	if c.session == "" && g.rng.IntN(2) == 0 {
		return cmd(model.Command{CreateSession: g.sessionSpec()})
	}
	k := g.key()
	switch n := g.rng.IntN(100); {
	case n < 25:
		return Input{Read: &Read{Kind: ReadKey, Key: k}}
	case n < 35:
		return kv(model.KVOp{Verb: model.KVSet, Key: k, Value: g.value(), Flags: uint64(g.rng.IntN(2))})
	case n < 42:
		return kv(model.KVOp{Verb: model.KVCAS, Key: k, Value: g.value(), Index: c.seen[k]})
	case n < 62 && c.session != "":
		return kv(model.KVOp{Verb: model.KVLock, Key: k, Value: g.value(), Session: c.session})
	case n < 72 && c.session != "":
		if held := slices.Sorted(maps.Keys(c.held)); len(held) > 0 {
			k = held[g.rng.IntN(len(held))]
		}
		return kv(model.KVOp{Verb: model.KVUnlock, Key: k, Value: g.value(), Session: c.session})
	case n < 75:
		return kv(model.KVOp{Verb: model.KVDelete, Key: k})
	case n < 77:
		return kv(model.KVOp{Verb: model.KVDeleteCAS, Key: k, Index: c.seen[k]})
	case n < 83:
		return cmd(model.Command{Txn: g.txn(c, k)})
	case n < 86:
		return Input{Read: &Read{Kind: ReadPrefix, Key: "k0"}}
	case n < 89 && c.session != "":
		if g.rng.IntN(2) == 0 {
			return Input{Read: &Read{Kind: RenewSess, Session: c.session}}
		}
		return Input{Read: &Read{Kind: ReadSession, Session: c.session}}
	case n < 91 && c.session != "":
		return cmd(model.Command{DestroySession: &model.DestroySession{ID: c.session}})
	}
	return Input{Read: &Read{Kind: ReadKey, Key: k}}
}

func (g *generator) txn(c *genClient, k string) *model.Txn {
	k2 := g.key()
	if g.cfg.CatalogTxns && g.rng.IntN(2) == 0 {
		return g.catalogTxn(c, k, k2)
	}
	switch g.rng.IntN(4) {
	case 0:
		if c.session != "" {
			return model.KVTxn(model.KVOp{Verb: model.KVLock, Key: k, Session: c.session}, model.KVOp{Verb: model.KVGet, Key: k})
		}
		fallthrough
	case 1:
		return model.KVTxn(model.KVOp{Verb: model.KVCheckIndex, Key: k, Index: c.seen[k]}, model.KVOp{Verb: model.KVSet, Key: k2, Value: g.value()})
	case 2:
		if li, ok := c.held[k]; ok {
			return model.KVTxn(model.KVOp{Verb: model.KVCheckSequencer, Key: k, Session: c.session, Index: li}, model.KVOp{Verb: model.KVSet, Key: k2, Value: g.value()})
		}
		fallthrough
	default:
		return model.KVTxn(model.KVOp{Verb: model.KVSet, Key: k, Value: g.value()}, model.KVOp{Verb: model.KVGetTree, Key: "k1"})
	}
}

// catalogTxn draws a txn with a catalog or session op beside KV ops.
func (g *generator) catalogTxn(c *genClient, k, k2 string) *model.Txn {
	switch g.rng.IntN(3) {
	case 0:
		// A check status set: critical invalidates the sessions bound to
		// web at the txn's index, which may write k before the index
		// check (S68).
		status := []model.Health{model.HealthPassing, model.HealthPassing, model.HealthCritical}[g.rng.IntN(3)]
		return &model.Txn{Ops: []model.TxnOp{
			{Check: &model.CheckTxnOp{Verb: model.CatalogSet, Node: "n2", Check: model.CheckSpec{CheckID: "web", Status: status}}},
			{KV: &model.KVOp{Verb: model.KVCheckIndex, Key: k, Index: c.seen[k]}},
			{KV: &model.KVOp{Verb: model.KVSet, Key: k2, Value: g.value()}},
		}}
	case 1:
		if c.session != "" {
			// The client ends its own session and writes, only if it still
			// holds k (S69).
			return &model.Txn{Ops: []model.TxnOp{
				{KV: &model.KVOp{Verb: model.KVCheckSession, Key: k, Session: c.session}},
				{Session: &model.SessionTxnOp{Verb: model.SessionDelete, ID: c.session}},
				{KV: &model.KVOp{Verb: model.KVSet, Key: k2, Value: g.value()}},
			}}
		}
		fallthrough
	default:
		return &model.Txn{Ops: []model.TxnOp{
			{Node: &model.NodeTxnOp{Verb: model.CatalogGet, Node: "n1"}},
			{KV: &model.KVOp{Verb: model.KVGetOrEmpty, Key: k}},
		}}
	}
}

func (g *generator) sessionSpec() *model.CreateSession {
	cs := &model.CreateSession{Name: "gen", Node: "n1", Checks: []string{}, Behavior: model.BehaviorRelease,
		LockDelay: []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond}[g.rng.IntN(3)]}
	switch g.rng.IntN(5) {
	case 0:
		cs.Behavior = model.BehaviorDelete
	case 1:
		cs.Node, cs.Checks = "n2", []string{"web"}
	case 2:
		cs.Checks = []string{model.SerfHealthCheckID}
	}
	return cs
}

// complete applies p at its instant and records what the client saw.
func (g *generator) complete(p *pendingOp) {
	c, in := p.client, p.op.Input
	var out Output
	if p.effect {
		if in.Read != nil {
			out = g.read(*in.Read)
		} else {
			out = g.write(*in.Command, p.point)
		}
	}
	if p.op.Unknown {
		if cs := in.Command; cs != nil && cs.DestroySession != nil {
			c.session, c.held = "", map[string]uint64{}
		}
		g.h.Ops = append(g.h.Ops, p.op)
		return
	}
	p.op.Output = out
	g.h.Ops = append(g.h.Ops, p.op)
	g.learn(c, in, out)
}

// learn updates what the client knows from an answer.
func (g *generator) learn(c *genClient, in Input, out Output) {
	for _, e := range out.Entries {
		c.seen[e.Key] = e.ModifyIndex
	}
	if in.Read != nil && in.Read.Kind == ReadKey && !out.OK {
		c.seen[in.Read.Key] = 0
	}
	cmd := in.Command
	switch {
	case in.Read != nil && in.Read.Session == c.session && in.Read.Session != "" && !out.OK,
		out.Error != "" && cmd != nil && cmd.KV != nil && cmd.KV.Verb == model.KVLock:
		// The session was invalidated behind the client's back.
		c.session, c.held = "", map[string]uint64{}
	case cmd == nil:
	case cmd.CreateSession != nil && out.SessionID != "":
		c.session, c.held = out.SessionID, map[string]uint64{}
	case cmd.DestroySession != nil, cmd.Txn != nil && out.OK && endsSession(cmd.Txn, c.session):
		c.session, c.held = "", map[string]uint64{}
	case cmd.KV != nil && cmd.KV.Verb == model.KVLock && out.OK:
		if e, ok := g.st.Get(cmd.KV.Key); ok && e.Session == c.session {
			c.held[cmd.KV.Key] = e.LockIndex
		}
	case cmd.KV != nil && cmd.KV.Verb == model.KVUnlock:
		delete(c.held, cmd.KV.Key)
	}
}

// endsSession reports whether t deletes session id.
func endsSession(t *model.Txn, id string) bool {
	return slices.ContainsFunc(t.Ops, func(op model.TxnOp) bool { return op.Session != nil && op.Session.ID == id })
}

func (g *generator) read(rd Read) Output {
	switch rd.Kind {
	case ReadKey:
		if e, ok := g.st.Get(rd.Key); ok {
			return Output{OK: true, Entries: []model.KVEntry{e}}
		}
		return Output{}
	case ReadPrefix:
		es := g.st.List(rd.Key)
		return Output{OK: len(es) > 0, Entries: es}
	default:
		se, ok := g.st.Session(rd.Session)
		if !ok {
			return Output{}
		}
		return Output{OK: true, Session: &se}
	}
}

// write is the server: the leader's lock-delay check, then raft apply.
func (g *generator) write(cmd model.Command, now int64) Output {
	for _, k := range cmd.LockKeys() {
		if !g.delays.Blocks(k, time.Unix(0, now)) {
			continue
		}
		if cmd.KV != nil {
			return Output{LockDelayed: g.rng.IntN(2) == 0}
		}
		for i, op := range cmd.Txn.Ops {
			if op.KV != nil && op.KV.Verb == model.KVLock && op.KV.Key == k {
				return Output{LockDelayed: true, TxnErrors: []model.TxnError{{OpIndex: i, What: fmt.Sprintf("failed to lock key %q due to lock delay", k)}}}
			}
		}
	}
	if cmd.CreateSession != nil {
		cs := *cmd.CreateSession
		g.nextID++
		cs.ID = fmt.Sprintf("%08x-%04x-4000-8000-%012x", g.rng.Uint32(), g.nextID, g.rng.Uint64()&0xffffffffffff)
		cmd.CreateSession = &cs
	}
	res := g.apply(cmd, now)
	switch {
	case res.Err != nil:
		return Output{Error: res.Err.Msg}
	case len(res.TxnErrors) > 0:
		return Output{TxnErrors: res.TxnErrors}
	case cmd.CreateSession != nil:
		g.live = append(g.live, res.SessionID)
		return Output{OK: true, SessionID: res.SessionID}
	case cmd.Txn != nil:
		return Output{OK: true, Entries: res.KVResults()}
	}
	return Output{OK: res.OK}
}

func (g *generator) apply(cmd model.Command, now int64) model.Result {
	res := g.st.Apply(g.idx, cmd)
	g.log = append(g.log, applied{index: g.idx, cmd: cmd, res: res})
	g.idx += 1 + uint64(g.rng.IntN(2)) // raft indexes have gaps (no-ops, config changes)
	for _, d := range res.LockDelays {
		g.delays.Arm(d.Key, time.Unix(0, now), d.Delay)
	}
	return res
}

func (g *generator) scheduleEvent(at int64) {
	heap.Push(&g.q, &pendingOp{point: at})
}

// fireEvent is a server-initiated invalidation at instant now: a TTL-like
// destroy of a random session, or the web check going critical (and
// passing again). Its recorded window brackets now.
func (g *generator) fireEvent(now int64) {
	var ev Event
	switch {
	case g.rng.IntN(4) == 0:
		status := model.HealthCritical
		if c, ok := g.st.Check(model.CheckKey{Node: "n2", CheckID: "web"}); ok && c.Status == model.HealthCritical {
			status = model.HealthPassing
		}
		cmd := model.Command{Register: &model.Register{Node: "n2", Address: "10.0.0.2", Checks: []model.CheckSpec{{CheckID: "web", Status: status}}}}
		res := g.apply(cmd, now)
		ev = Event{Kind: "check-" + string(status), Command: &cmd, Invalidated: res.Invalidated}
	default:
		var live []string
		for _, id := range g.live {
			if _, ok := g.st.Session(id); ok {
				live = append(live, id)
			}
		}
		g.live = live
		if len(live) == 0 {
			break
		}
		id := live[g.rng.IntN(len(live))]
		g.apply(model.Command{DestroySession: &model.DestroySession{ID: id}}, now)
		ev = Event{Kind: "ttl-expiry", Sessions: []string{id}}
	}
	if ev.Kind != "" {
		ev.Earliest = Nanos(now - g.dur(0, 3*time.Millisecond))
		ev.Latest = Nanos(now + g.dur(0, 3*time.Millisecond))
		g.h.Events = append(g.h.Events, ev)
	}
	if g.issued < g.cfg.Ops {
		g.scheduleEvent(now + g.dur(g.cfg.EventEvery/2, 3*g.cfg.EventEvery/2))
	}
}
