package tla

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// none is Sessions.tla's None: no session, no writer.
const none = "none"

// Session states of Sessions.tla's sessState.
const (
	sessUnborn = "unborn"
	sessLive   = "live"
	sessDead   = "dead"
)

// checkGone is the status of a check whose node was deregistered.
const checkGone = "gone"

// kvRec is one key as Sessions.tla sees it; Exists = false is an absent key
// with zero fields.
type kvRec struct {
	Exists      bool   `json:"exists"`
	LockIndex   uint64 `json:"lockIndex"`
	Session     string `json:"session"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// belief is a client's belief that it holds a key; Tenure is the ghost
// tenure it was formed in.
type belief struct {
	Held      bool   `json:"held"`
	LockIndex uint64 `json:"lockIndex"`
	Tenure    uint64 `json:"tenure"`
}

// write is the last write a resource accepted for a key; Stale records that
// its writer was not a legitimate holder when it wrote.
type write struct {
	Writer string `json:"writer"`
	Stale  bool   `json:"stale"`
}

// abs is one state of Sessions.tla: the values of its variables. Slices are
// indexed by the scenario's sorted name lists (Nodes, Checks, Sessions,
// Clients, Keys).
type abs struct {
	sc          *scenario
	Index       uint64
	NodeUp      []bool
	ServiceUp   []bool
	QueryState  []string // sessUnborn, sessLive or sessDead
	CheckStatus []string
	SessState   []string
	TTLLeft     []int
	KV          []kvRec
	Issued      []uint64
	Floor       uint64
	DelayLeft   []int
	Tenure      []uint64
	Belief      [][]belief // [client][key]
	Fenced      []write
	Unfenced    []write
}

// Key is a compact encoding of the state, for deduplication. Two states
// have the same key exactly when all their variables are equal.
func (a *abs) Key() string {
	b := make([]byte, 0, 128)
	num := func(v uint64) { b = binary.AppendUvarint(b, v) }
	str := func(s string) { num(uint64(len(s))); b = append(b, s...) }
	flag := func(v bool) {
		if v {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	num(a.Index)
	num(a.Floor)
	for _, v := range a.NodeUp {
		flag(v)
	}
	for _, v := range a.ServiceUp {
		flag(v)
	}
	for _, v := range a.QueryState {
		str(v)
	}
	for _, v := range a.CheckStatus {
		str(v)
	}
	for i := range a.SessState {
		str(a.SessState[i])
		num(uint64(a.TTLLeft[i]))
	}
	for i, e := range a.KV {
		flag(e.Exists)
		num(e.LockIndex)
		str(e.Session)
		num(e.ModifyIndex)
		num(a.Issued[i])
		num(uint64(a.DelayLeft[i]))
		num(a.Tenure[i])
		str(a.Fenced[i].Writer)
		flag(a.Fenced[i].Stale)
		str(a.Unfenced[i].Writer)
		flag(a.Unfenced[i].Stale)
	}
	for _, row := range a.Belief {
		for _, bl := range row {
			flag(bl.Held)
			num(bl.LockIndex)
			num(bl.Tenure)
		}
	}
	return string(b)
}

// TLA returns the state in the shape TLC's JSON traces use: variable name to
// value, functions over names as objects.
func (a *abs) TLA() map[string]any {
	sc := a.sc
	byName := func(names []string, val func(i int) any) map[string]any {
		m := make(map[string]any, len(names))
		for i, n := range names {
			m[n] = val(i)
		}
		return m
	}
	return map[string]any{
		"index":       a.Index,
		"nodeUp":      byName(sc.Nodes, func(i int) any { return a.NodeUp[i] }),
		"serviceUp":   byName(sc.Services, func(i int) any { return a.ServiceUp[i] }),
		"queryState":  byName(sc.Queries, func(i int) any { return a.QueryState[i] }),
		"checkStatus": byName(sc.Checks, func(i int) any { return a.CheckStatus[i] }),
		"sessState":   byName(sc.Sessions, func(i int) any { return a.SessState[i] }),
		"ttlLeft":     byName(sc.Sessions, func(i int) any { return a.TTLLeft[i] }),
		"kv":          byName(sc.Keys, func(i int) any { return a.KV[i] }),
		"issued":      byName(sc.Keys, func(i int) any { return a.Issued[i] }),
		"floor":       a.Floor,
		"delayLeft":   byName(sc.Keys, func(i int) any { return a.DelayLeft[i] }),
		"tenure":      byName(sc.Keys, func(i int) any { return a.Tenure[i] }),
		"belief": byName(sc.Clients, func(c int) any {
			return byName(sc.Keys, func(k int) any { return a.Belief[c][k] })
		}),
		"fenced":   byName(sc.Keys, func(i int) any { return a.Fenced[i] }),
		"unfenced": byName(sc.Keys, func(i int) any { return a.Unfenced[i] }),
	}
}

// normalJSON round-trips v through JSON, so that a Go state and a state
// decoded from TLC's trace compare with reflect.DeepEqual.
func normalJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	return out, nil
}

// held reports Sessions.tla's Held(k).
func (a *abs) held(k int) bool { return a.KV[k].Exists && a.KV[k].Session != none }

// legit reports Sessions.tla's Legit(c, k): c acquired k in k's current,
// unfinished tenure.
func (a *abs) legit(c, k int) bool {
	b := a.Belief[c][k]
	return b.Held && a.held(k) && b.Tenure == a.Tenure[k]
}

// seqValid reports Sessions.tla's SeqValid(c, k) on the abstract state. The
// explorer's fenced resource asks the model instead (model.CheckSequencer);
// the invariants use this one.
func (a *abs) seqValid(c, k int) bool {
	b := a.Belief[c][k]
	e := a.KV[k]
	return b.Held && e.Exists && e.Session == a.sc.ClientSession[a.sc.Clients[c]] && e.LockIndex == b.LockIndex
}
