package core

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/tenurekv/tenure/model"
)

// Kind classifies a trace event.
type Kind string

// Event kinds. A run's trace is the complete record the property checks read:
// they are pure functions of it, so a saved trace can be re-checked offline.
const (
	KindRun    Kind = "run"    // header: seed, config, clocks
	KindFault  Kind = "fault"  // a fault starts or ends
	KindCall   Kind = "call"   // a client sends a request
	KindRet    Kind = "ret"    // the request's outcome reaches the client
	KindState  Kind = "state"  // one raft entry changed a server's state (apply hook)
	KindLeader Kind = "leader" // a server gained or lost leadership
	KindWrite  Kind = "write"  // a resource accepted or rejected a write
	KindNet    Kind = "net"    // a simulated-network event
	KindNote   Kind = "note"   // anything else worth reading in a replay
)

// Markers the runner writes as notes; the checks key on them.
const (
	// NoteLiveness marks the last heal: faults are over, surviving clients
	// have released, and the prober starts acquiring every key.
	NoteLiveness = "phase:liveness"
	// NoteExcludePrefix + key: the key is held by an owner that is gone but
	// whose session no mechanism ends (no TTL, node alive): not expected to
	// become acquirable (the "none"/"serf" rows' trade-off).
	NoteExcludePrefix = "exclude-key:"
	// NoteCrashPrefix + server: a server crashed; NoteRestartPrefix: restarted.
	NoteCrashPrefix   = "crash:"
	NoteRestartPrefix = "restart:"
	// NoteStopsPrefix + error: a server stopped itself (its log could not
	// be made durable), and is crashed next.
	NoteStopsPrefix = "stops:"
	// NoteSyncFailedPrefix + path: the node's disk failed an fsync (the
	// first of an fsync-error fault).
	NoteSyncFailedPrefix = "sync-failed:"
)

// Names of the sim's own clients.
const (
	ProberClient = "prober"
	FinalClient  = "final"
)

// Event is one line of the trace. At is virtual time since the run started.
type Event struct {
	Seq  int           `json:"seq"`
	At   time.Duration `json:"at"`
	Kind Kind          `json:"kind"`
	Node string        `json:"node,omitempty"`

	Run    *RunHeader `json:"run,omitempty"`
	Fault  *FaultMark `json:"fault,omitempty"`
	Call   *Call      `json:"call,omitempty"`
	Ret    *Ret       `json:"ret,omitempty"`
	State  *StateObs  `json:"state,omitempty"`
	Leader *bool      `json:"leader,omitempty"`
	Write  *ResWrite  `json:"write,omitempty"`
	Msg    string     `json:"msg,omitempty"`
}

// RunHeader is the first event: what a reader needs to interpret the rest.
type RunHeader struct {
	Seed    uint64       `json:"seed"`
	Servers []string     `json:"servers"`
	Clients []ClientInfo `json:"clients"`
	// Agents are the client agents' nodes (with gossip); a client's Agent
	// names its own.
	Agents []string             `json:"agents,omitempty"`
	Clocks map[string]ClockSkew `json:"clocks"`
	Faults []Fault              `json:"faults"`
	Bounds Bounds               `json:"bounds"`
	Groups map[string]GroupInfo `json:"groups"`
	// Variant names a deliberately broken server, "" for the real one.
	Variant string `json:"variant,omitempty"`
	// ACL, if set, is a run with ACLs on: what the servers enforce and
	// the tokens the clients are given (nil: ACLs off).
	ACL *ACLSetup `json:"acl,omitempty"`
}

// ACLSetup is the ACL configuration of a run: the servers' default policy,
// the initial management token they write, and each client's token with
// the rules of its one policy, created through the API before the clients
// start. The acl-enforced check re-decides the clients' requests from it.
type ACLSetup struct {
	DefaultPolicy string `json:"default_policy"`
	// Management is the initial management token's secret; the sim's own
	// clients (prober, final reads, the resources' sequencer checks) and
	// the client agents use it.
	Management string `json:"management"`
	// Tokens are the clients' tokens, by client name.
	Tokens map[string]ACLToken `json:"tokens"`
}

// ACLToken is one client's token and the rules of its policy.
type ACLToken struct {
	AccessorID string `json:"accessor_id"`
	SecretID   string `json:"secret_id"`
	Rules      string `json:"rules"`
}

// ClientInfo names a client, its session group and the agent it talks to
// (its own client agent with gossip, else the server it tries first).
type ClientInfo struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	Agent string `json:"agent"`
}

// GroupInfo is a session configuration and the lock key its clients contend for.
type GroupInfo struct {
	Config SessionConfig `json:"config"`
	Key    string        `json:"key"`
}

// ClockSkew is a node clock: node time = bubble time × Rate + Offset.
type ClockSkew struct {
	Offset time.Duration `json:"offset"`
	Rate   float64       `json:"rate"`
}

// FaultMark says a scheduled fault started or ended, and on whom it acted.
type FaultMark struct {
	ID      int       `json:"id"`
	Kind    FaultKind `json:"kind"`
	Phase   string    `json:"phase"` // "start" or "end"
	Targets []string  `json:"targets,omitempty"`
	Note    string    `json:"note,omitempty"`
}

// ReqKind names a client request.
type ReqKind string

// Client requests.
const (
	ReqCreate  ReqKind = "create"
	ReqDestroy ReqKind = "destroy"
	ReqRenew   ReqKind = "renew"
	ReqGet     ReqKind = "get"
	ReqKV      ReqKind = "kv"
	ReqTxn     ReqKind = "txn"
	// Agent-local requests (the client's own agent answers them): register
	// the agent TTL check, and pass it (Call.ID is the check). They are not
	// raft writes themselves; anti-entropy carries the check's status.
	ReqCheckRegister ReqKind = "check-register"
	ReqCheckPass     ReqKind = "check-pass"
	// ReqQuery creates a prepared query bound to a session (S58).
	ReqQuery ReqKind = "query-create"
)

// Call is a request as the client sent it.
type Call struct {
	Op     int                  `json:"op"`
	Server string               `json:"server"`
	Req    ReqKind              `json:"req"`
	Create *model.CreateSession `json:"create,omitempty"`
	ID     string               `json:"id,omitempty"`  // session for destroy/renew, check for check-*
	Key    string               `json:"key,omitempty"` // for get
	KV     *model.KVOp          `json:"kv,omitempty"`
	Txn    []model.KVOp         `json:"txn,omitempty"`
	Query  *model.PreparedQuery `json:"query,omitempty"`
	// Token is the ACL secret the request carried ("" for none).
	Token string `json:"token,omitempty"`
	// ClientTime is the client's own clock at the call; its TTL belief uses it.
	ClientTime time.Time `json:"client_time"`
}

// Outcome is what a client knows about whether its request took effect.
type Outcome string

// Outcomes. Unknown means the request may or may not have been applied
// (timeout, broken connection): linearizability treats it as pending forever.
// NotApplied means it certainly was not (the connection was never made, or
// the server answered that no leader took it): it carries no information.
const (
	OutOK         Outcome = "ok"
	OutFail       Outcome = "fail"
	OutUnknown    Outcome = "unknown"
	OutNotApplied Outcome = "not-applied"
)

// Ret is a request's outcome.
type Ret struct {
	Op      int     `json:"op"`
	Outcome Outcome `json:"outcome"`
	Status  int     `json:"status,omitempty"`
	// OK is the boolean answer of acquire, release, cas and delete-cas.
	OK        bool             `json:"ok,omitempty"`
	SessionID string           `json:"session_id,omitempty"`
	QueryID   string           `json:"query_id,omitempty"`
	Found     bool             `json:"found,omitempty"` // get: the key exists
	Entries   []model.KVEntry  `json:"entries,omitempty"`
	TxnErrors []model.TxnError `json:"txn_errors,omitempty"`
	Index     uint64           `json:"index,omitempty"`
	LockDelay bool             `json:"lock_delay,omitempty"` // refused for lock-delay
	Err       string           `json:"err,omitempty"`
}

// StateObs is what one raft entry did to one server's state, recorded by
// the server's apply hook (agent.ServerConfig.Observe) at the virtual instant of
// the apply. Entries that changed nothing are not recorded.
type StateObs struct {
	// Index is the entry's raft index (the state's index after it).
	Index uint64 `json:"index"`
	// Term is the raft term the entry was proposed in, which may be older
	// than the applying leader's (an entry commits in a later term).
	Term uint64 `json:"term,omitempty"`
	// Command is the entry's command kind (model.Command.Kind).
	Command string `json:"command,omitempty"`
	Leader  bool   `json:"leader"`
	// LeaderTerm is the term the applying server leads in, when Leader is
	// set. Only a leader whose LeaderTerm is the entry's Term proposed the
	// entry; a later leader applying it after catching up did not.
	LeaderTerm uint64    `json:"leader_term,omitempty"`
	Clock      time.Time `json:"clock"` // the server's own clock
	// Incarnation counts the server's restarts; each incarnation starts
	// from an empty state.
	Incarnation int `json:"incarnation,omitempty"`
	// Replay is set while a restarted server re-applies entries the cluster
	// had already applied before the restart: their timing says nothing.
	Replay bool `json:"replay,omitempty"`
	// Restored is set for a snapshot restore: the change spans every entry
	// the snapshot covers, so it says nothing about any one of them.
	Restored bool `json:"restored,omitempty"`
	// Orphans are keys held by a session that does not exist (S15, S40).
	Orphans  []string        `json:"orphans,omitempty"`
	NewSess  []model.Session `json:"new_sessions,omitempty"`
	GoneSess []model.Session `json:"gone_sessions,omitempty"`
	Keys     []KeyChange     `json:"keys,omitempty"`
	// Checks lists check statuses that changed (node/checkID → status).
	Checks map[string]model.Health `json:"checks,omitempty"`
	// GoneQueries are the prepared queries the entry deleted (ID →
	// session it was bound to, "" if none); QueryOrphans are queries left
	// bound to a session that does not exist after it (S58).
	GoneQueries  map[string]string `json:"gone_queries,omitempty"`
	QueryOrphans []string          `json:"query_orphans,omitempty"`
	// GoneNodes are the catalog nodes the entry removed, sorted: a
	// deregistration the clients may see as "Missing node registration".
	GoneNodes []string `json:"gone_nodes,omitempty"`
	// NodeMeta is the meta of each catalog node the entry created or whose
	// meta it changed (node → meta after), for the agents' records (S63).
	NodeMeta map[string]map[string]string `json:"node_meta,omitempty"`
}

// KeyChange is one key's entry before and after; nil means absent.
type KeyChange struct {
	Key    string         `json:"key"`
	Before *model.KVEntry `json:"before,omitempty"`
	After  *model.KVEntry `json:"after,omitempty"`
	// DeletedAt is the index of the key's deletion when After is nil.
	DeletedAt uint64 `json:"deleted_at,omitempty"`
}

// ResWrite is a write that reached a resource.
type ResWrite struct {
	Resource string          `json:"resource"` // "fenced" or "unfenced"
	Client   string          `json:"client"`
	Seq      model.Sequencer `json:"seq"`
	Value    string          `json:"value"`
	Accepted bool            `json:"accepted"`
	Reason   string          `json:"reason,omitempty"`
	// CheckCall is when the fenced resource's sequencer check was sent to the
	// cluster (txn mode); its linearisation point is after it.
	CheckCall time.Duration `json:"check_call,omitempty"`
	Mode      string        `json:"mode,omitempty"`
}

// Recorder collects events. It is safe for concurrent use; events get their
// Seq in the order Add is called.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	events []Event
	// nextOp numbers client operations.
	nextOp int
}

// newRecorder starts a trace at the current (virtual) time.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Add stamps e with the next sequence number and the current virtual time.
func (r *Recorder) Add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = len(r.events)
	e.At = time.Since(r.start)
	r.events = append(r.events, e)
}

// Elapsed is the virtual time since the trace started.
func (r *Recorder) Elapsed() time.Duration { return time.Since(r.start) }

// NextOp returns a fresh operation number.
func (r *Recorder) NextOp() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextOp++
	return r.nextOp
}

// Events returns a copy of the trace so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// writeJSONL writes events one JSON object per line.
func WriteJSONL(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range events {
		if err := enc.Encode(&events[i]); err != nil {
			return fmt.Errorf("encode event %d: %w", events[i].Seq, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// readJSONL reads a trace written by writeJSONL.
func ReadJSONL(r io.Reader) ([]Event, error) {
	dec := json.NewDecoder(r)
	var out []Event
	for dec.More() {
		var e Event
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("decode trace line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Digest is a hash of the whole trace up to the order of events that
// happened at the same virtual instant (the scheduler's choice, not the
// simulation's, as in simnet.CanonicalTrace): two runs replayed
// identically iff their digests are equal.
func Digest(events []Event) string {
	lines := make([][]byte, len(events))
	for i, e := range events {
		e.Seq = 0
		b, err := json.Marshal(e)
		if err != nil {
			// Encoding our own plain structs cannot fail; say so loudly if it does.
			return "unencodable: " + err.Error()
		}
		lines[i] = b
	}
	idx := make([]int, len(events))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ea, eb := events[idx[a]], events[idx[b]]
		if ea.At != eb.At {
			return ea.At < eb.At
		}
		return bytes.Compare(lines[idx[a]], lines[idx[b]]) < 0
	})
	h := sha256.New()
	for _, i := range idx {
		h.Write(lines[i])
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
