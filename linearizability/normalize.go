package linearizability

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/model"
)

// ErrBadHistory wraps every complaint about a malformed history.
var ErrBadHistory = errors.New("malformed history")

// opKind says how an operation is stepped and which partitions get it.
type opKind int

const (
	// kindShared: session lifecycle and catalog commands, and events. They
	// decide session existence, so every partition replays them.
	kindShared opKind = iota
	kindKV            // a stand-alone KV write on one key (or a prefix)
	kindTxn           // a transaction
	kindRead          // a read
)

// rec is one operation ready for the checker: validated, with the server's
// choices (session ID) folded into its command.
type rec struct {
	id     int
	client int
	// call and ret bound the linearization point; ret is math.MaxInt64 for
	// an unknown outcome.
	call, ret int64
	unknown   bool
	kind      opKind
	// cmds is the command; an event naming its sessions has one destroy each.
	cmds  []model.Command
	read  Read
	out   Output
	event *Event
}

// txnKeyCap bounds the index-bearing ops that follow a write of the same key
// inside one txn; each doubles the candidates a step tries (see indexes.go).
const txnKeyCap = 8

// rejectedID stands in for the ID of a create the server rejected. It is
// not a UUID, so no server hands it out.
const rejectedID = "\x00rejected-create"

// normalize validates h and turns it into records. It returns the
// operations it dropped because they carry no checkable information (an
// unknown read; an unknown create, whose ID nobody learned), and the static
// violations it found (a session ID issued twice).
func normalize(h History) (recs []*rec, dropped int, violations []string, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadHistory}, args...)...)
	}
	for i, c := range h.Setup {
		if c.Register == nil {
			return nil, 0, nil, bad("setup[%d]: only Register commands may set up a history", i)
		}
		if _, err := c.Kind(); err != nil {
			return nil, 0, nil, bad("setup[%d]: %v", i, err)
		}
	}
	if h.LockDelaySlack < 0 {
		return nil, 0, nil, bad("LockDelaySlack %d is negative", h.LockDelaySlack)
	}
	maxClient := -1
	issued := map[string]int{}
	for i, op := range h.Ops {
		r, err := normalizeOp(i, op)
		if err != nil {
			return nil, 0, nil, bad("op %d (client %d): %v", i, op.Client, err)
		}
		maxClient = max(maxClient, op.Client)
		if r == nil {
			dropped++
			continue
		}
		if id := createdID(r); id != "" {
			if j, dup := issued[id]; dup {
				violations = append(violations, fmt.Sprintf("session ID %q was issued by op %d and again by op %d (S1)", id, j, i))
			}
			issued[id] = i
		}
		recs = append(recs, r)
	}
	for i := range h.Events {
		ev := &h.Events[i]
		r, err := normalizeEvent(ev)
		if err != nil {
			return nil, 0, nil, bad("event %d (%s): %v", i, ev.Kind, err)
		}
		r.client = maxClient + 1 // the pseudo-client of server-initiated events
		recs = append(recs, r)
	}
	for i, r := range recs {
		r.id = i
		violations = append(violations, listViolations(r)...)
	}
	return recs, dropped, violations, nil
}

func createdID(r *rec) string {
	if r.kind == kindShared && r.event == nil && !r.unknown && r.cmds[0].CreateSession != nil && r.out.Error == "" {
		return r.out.SessionID
	}
	return ""
}

// listViolations finds list answers that contradict their own request: an
// entry outside the prefix, or entries out of order.
func listViolations(r *rec) []string {
	if r.kind != kindRead || r.read.Kind != ReadPrefix {
		return nil
	}
	var out []string
	for i, e := range r.out.Entries {
		if !strings.HasPrefix(e.Key, r.read.Key) {
			out = append(out, fmt.Sprintf("list %q (client %d) returned key %q outside the prefix", r.read.Key, r.client, e.Key))
		}
		if i > 0 && r.out.Entries[i-1].Key >= e.Key {
			out = append(out, fmt.Sprintf("list %q (client %d) returned keys out of order or twice at %q", r.read.Key, r.client, e.Key))
		}
	}
	return out
}

func normalizeOp(i int, op Op) (*rec, error) {
	r := &rec{client: op.Client, call: int64(op.Call), ret: int64(op.Return), unknown: op.Unknown, out: op.Output}
	switch {
	case op.Client < 0:
		return nil, fmt.Errorf("negative client ID")
	case (op.Input.Command == nil) == (op.Input.Read == nil):
		return nil, fmt.Errorf("input must have exactly one of Command and Read")
	case !op.Unknown && op.Return < op.Call:
		return nil, fmt.Errorf("returns at %d, before its call at %d", op.Return, op.Call)
	}
	if op.Unknown {
		r.ret = math.MaxInt64
		r.out = Output{}
	}
	if op.Input.Read != nil {
		if op.Unknown {
			return nil, nil // an unanswered read tells nothing
		}
		r.kind, r.read = kindRead, *op.Input.Read
		return r, validateRead(r.read, r.out)
	}
	cmd := cloneCommand(*op.Input.Command)
	kind, err := cmd.Kind()
	if err != nil {
		return nil, err
	}
	switch kind {
	case "register", "deregister", "destroy-session":
		r.kind = kindShared
	case "create-session":
		r.kind = kindShared
		if op.Unknown {
			return nil, nil // nobody learned the ID, so nobody can use it
		}
		cs := cmd.CreateSession
		switch {
		case r.out.Error == "" && r.out.SessionID == "":
			return nil, fmt.Errorf("successful create without Output.SessionID")
		case r.out.Error != "":
			if cs.ID != "" {
				return nil, fmt.Errorf("rejected create names ID %q", cs.ID)
			}
			cs.ID = rejectedID
		case cs.ID != "" && cs.ID != r.out.SessionID:
			return nil, fmt.Errorf("create input ID %q differs from the returned %q", cs.ID, r.out.SessionID)
		default:
			cs.ID = r.out.SessionID
		}
	case "kv":
		r.kind = kindKV
		if !cmd.KV.Verb.IsWrite() {
			return nil, fmt.Errorf("KV verb %q is not a write; record plain reads as Read", cmd.KV.Verb)
		}
		cmd.KV.LockDelaySeen = 0
		if n := len(r.out.Entries); n > 0 {
			// Only a granted acquire names an entry: its holding period (S64).
			if cmd.KV.Verb != model.KVLock || !r.out.OK || n != 1 || r.out.Entries[0].Key != cmd.KV.Key {
				return nil, fmt.Errorf("%s of %q answered %d entries; only a granted lock names one, of its own key", cmd.KV.Verb, cmd.KV.Key, n)
			}
		}
	case "txn":
		r.kind = kindTxn
		if err := validateTxn(cmd.Txn, &r.out); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unsupported command %s", kind)
	}
	r.cmds = []model.Command{cmd}
	return r, nil
}

func validateRead(rd Read, out Output) error {
	switch rd.Kind {
	case ReadKey:
		if rd.Key == "" {
			return fmt.Errorf("get without a key")
		}
		if out.OK != (len(out.Entries) == 1) {
			return fmt.Errorf("get answer must be OK with one entry, or not found with none (got OK=%v, %d entries)", out.OK, len(out.Entries))
		}
		if out.OK && out.Entries[0].Key != rd.Key {
			return fmt.Errorf("get %q answered key %q", rd.Key, out.Entries[0].Key)
		}
	case ReadPrefix:
		// An empty prefix lists everything.
	case ReadSession, RenewSess:
		if rd.Session == "" {
			return fmt.Errorf("%s without a session", rd.Kind)
		}
		if out.Session != nil && !out.OK {
			return fmt.Errorf("%s answered a session but not OK", rd.Kind)
		}
	default:
		return fmt.Errorf("unknown read kind %q", rd.Kind)
	}
	return nil
}

// validateTxn bounds the candidate search and folds a lock-delay error text
// into LockDelayed (S25).
func validateTxn(t *model.Txn, out *Output) error {
	for _, e := range out.TxnErrors {
		if strings.Contains(e.What, "due to lock delay") {
			out.LockDelayed = true
		}
	}
	late := 0
	for j, op := range t.Ops {
		switch {
		case op.KV != nil:
			op.KV.LockDelaySeen = 0
			if usesModifyIndex(*op.KV) && slices.ContainsFunc(t.Ops[:j], func(w model.TxnOp) bool { return w.KV == nil || writesKey(*w.KV, op.KV.Key) }) {
				late++
			}
		case catalogIndex(op) != 0:
			// Catalog indexes are the server's and the checker tracks
			// none, so it cannot tell which record a cas names.
			return fmt.Errorf("txn op %d compares a catalog ModifyIndex (%d); catalog cas and delete-cas with an index are not supported", j, catalogIndex(op))
		}
	}
	if late > txnKeyCap {
		return fmt.Errorf("txn has %d index checks after writes of the same key; at most %d are supported", late, txnKeyCap)
	}
	return nil
}

// catalogIndex is the ModifyIndex a catalog cas or delete-cas op compares.
func catalogIndex(op model.TxnOp) uint64 {
	switch {
	case op.Node != nil:
		return op.Node.Index
	case op.Service != nil:
		return op.Service.Index
	case op.Check != nil:
		return op.Check.Index
	}
	return 0
}

func normalizeEvent(ev *Event) (*rec, error) {
	r := &rec{call: int64(ev.Earliest), ret: int64(ev.Latest), kind: kindShared, event: ev, out: Output{OK: true}}
	switch {
	case ev.Latest < ev.Earliest:
		return nil, fmt.Errorf("window ends at %d, before it starts at %d", ev.Latest, ev.Earliest)
	case (ev.Command == nil) == (len(ev.Sessions) == 0):
		return nil, fmt.Errorf("event must have exactly one of Command and Sessions")
	case ev.Command != nil:
		c := *ev.Command
		if c.Register == nil && c.Deregister == nil && c.DestroySession == nil {
			return nil, fmt.Errorf("event command must be Register, Deregister or DestroySession")
		}
		if _, err := c.Kind(); err != nil {
			return nil, err
		}
		r.cmds = []model.Command{cloneCommand(c)}
	default:
		for _, id := range ev.Sessions {
			if id == "" {
				return nil, fmt.Errorf("empty session ID")
			}
			r.cmds = append(r.cmds, model.Command{DestroySession: &model.DestroySession{ID: id}})
		}
	}
	return r, nil
}

// cloneCommand copies the parts normalize edits, so the caller's history is
// never changed.
func cloneCommand(c model.Command) model.Command {
	switch {
	case c.CreateSession != nil:
		cs := *c.CreateSession
		c.CreateSession = &cs
	case c.KV != nil:
		kv := *c.KV
		c.KV = &kv
	case c.Txn != nil:
		ops := slices.Clone(c.Txn.Ops)
		for i := range ops {
			if kv := ops[i].KV; kv != nil {
				cp := *kv
				ops[i].KV = &cp
			}
		}
		c.Txn = &model.Txn{Ops: ops}
	}
	return c
}

// catalogTxn reports whether a txn has a node, service, check or session
// op. Such an op may invalidate sessions, and with them release or delete
// keys anywhere, so the txn is replayed in every partition, as session and
// catalog commands are.
func catalogTxn(t *model.Txn) bool {
	_, only := t.KVOps()
	return !only
}

// isTreeVerb reports whether op.Key is a prefix rather than a key.
func isTreeVerb(v model.KVVerb) bool { return v == model.KVGetTree || v == model.KVDeleteTree }

// touches reports whether op reads or writes key.
func touches(op model.KVOp, key string) bool {
	if isTreeVerb(op.Verb) {
		return strings.HasPrefix(key, op.Key)
	}
	return op.Key == key
}

// writesKey reports whether op may change key.
func writesKey(op model.KVOp, key string) bool {
	return op.Verb.IsWrite() && touches(op, key)
}

// usesModifyIndex reports whether op compares its Index with a ModifyIndex.
func usesModifyIndex(op model.KVOp) bool {
	switch op.Verb {
	case model.KVCAS, model.KVDeleteCAS, model.KVCheckIndex:
		return op.Index != 0
	}
	return false
}
