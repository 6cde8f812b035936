package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	netrpc "net/rpc"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
)

// apiClient speaks Consul's HTTP API over the simulated network and records
// every request as a call/ret pair in the trace. It talks to one server (its
// agent) and moves to the next one when that server cannot be reached.
type ApiClient struct {
	Name    string
	Rec     *core.Recorder
	Http    *http.Client
	Servers []string // node names
	Agent   int
	Clock   *core.ClientClock
	Timeout time.Duration
	// AgentNode, if set, is the client agent the client talks to: a create
	// for that node leaves Node out of the body, so that the agent's
	// default fills it in (the trace keeps the node it must come to).
	AgentNode string
	// Token is the ACL secret every request carries as X-Consul-Token
	// ("" for none), recorded in each call.
	Token string
}

// noLeaderBody is the server's answer to a request no leader took
// (impl/internal/httpapi's Consul text, for the server's ErrNotLeader or no known leader).
const noLeaderBody = "No cluster leader"

// noServersBody is a client agent's answer when gossip knows no live
// server: the request went nowhere (Consul's text). Counted unknown, the
// requests of an outage of every server made the linearizability search
// exponential (power-loss of every server: a dozen per key).
const noServersBody = "No known Consul servers"

// agentNeverSent reports whether body is a client agent's answer to a
// request that never left it: impl/internal/httpapi's "rpc error: server A: " around
// an impl/internal/rpc Pool.Forward error "forward to A: " of one of two shapes.
//   - "dial: …": dialling A failed on the first try.
//   - "connection is shut down …": net/rpc's ErrShutdown first. Forward
//     joins its attempts' errors only when each ended in ErrShutdown or a
//     failed dial; an attempt that sent and then failed is returned alone,
//     never after this text. With impl/internal/rpc's codec net/rpc gives a call
//     ErrShutdown only before writing it: impl/internal/rpc's
//     TestForwardNeverResendsASentRequest holds that, and the comments at
//     Forward's retry and clientCodec.ReadResponseHeader say why.
//
// No server saw the request. Counting such answers unknown made a
// partitioned client's every request an operation the linearizability
// search may place anywhere later, exponential in their number (seed 2425:
// a dozen of them on one lock key took the check past its budget). Anything
// else after "forward to A: " (a failed read, a timeout) came after the
// request may have gone out, and a server's own "forward to leader …"
// answer came from a server that had the request: both stay unknown.
func agentNeverSent(body string) bool {
	rest, ok := strings.CutPrefix(body, "rpc error: server ")
	if !ok {
		return false
	}
	addr, rest, ok := strings.Cut(rest, ": ")
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, "forward to "+addr+": ")
	if !ok {
		return false
	}
	if strings.HasPrefix(rest, "dial: ") {
		return true
	}
	// The agent's error body is one line: the joined errors' newlines
	// arrive as spaces.
	rest, ok = strings.CutPrefix(rest, netrpc.ErrShutdown.Error())
	return ok && (rest == "" || rest[0] == ' ')
}

func (c *ApiClient) server() string { return c.Servers[c.Agent%len(c.Servers)] }

// do sends one request, records it, and fills ret from the answer. decode
// reads a 200 body; status 4xx is a definite failure; anything else
// (5xx, transport error, timeout) leaves the outcome unknown.
func (c *ApiClient) do(call core.Call, method, path string, body []byte, decode func(status int, h http.Header, b []byte, ret *core.Ret) error) *core.Ret {
	call.Op = c.Rec.NextOp()
	call.Server = c.server()
	call.Token = c.Token
	if c.Clock != nil {
		call.ClientTime = c.Clock.Now()
	}
	c.Rec.Add(core.Event{Kind: core.KindCall, Node: c.Name, Call: &call})
	ret := &core.Ret{Op: call.Op, Outcome: core.OutUnknown}
	defer func() { c.Rec.Add(core.Event{Kind: core.KindRet, Node: c.Name, Ret: ret}) }()

	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	u := "http://" + call.Server + ":" + core.HttpPort + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		ret.Err = err.Error()
		return ret
	}
	if c.Token != "" {
		req.Header.Set("X-Consul-Token", c.Token)
	}
	resp, err := c.Http.Do(req)
	if err != nil {
		ret.Err = err.Error()
		// A failed dial sent nothing (keep-alives are off: every request
		// dials afresh).
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			ret.Outcome = core.OutNotApplied
		}
		c.Agent++ // try another server next time
		return ret
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ret.Err = "read body: " + err.Error()
		return ret
	}
	ret.Status = resp.StatusCode
	switch {
	case resp.StatusCode == http.StatusOK || (resp.StatusCode == http.StatusConflict && call.Req == core.ReqTxn):
		ret.Outcome = core.OutOK
		if err := decode(resp.StatusCode, resp.Header, b, ret); err != nil {
			ret.Outcome, ret.Err = core.OutUnknown, "decode: "+err.Error()
		}
	case resp.StatusCode == http.StatusNotFound && (call.Req == core.ReqGet || call.Req == core.ReqRenew):
		ret.Outcome = core.OutOK
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		ret.Outcome, ret.Err = core.OutFail, string(b)
	default:
		ret.Err = fmt.Sprintf("%d: %s", resp.StatusCode, b)
		if resp.StatusCode == http.StatusInternalServerError && (string(b) == noLeaderBody || string(b) == noServersBody || agentNeverSent(string(b))) {
			// No server proposed it: a follower knew no leader, or the
			// leader's Apply found it was not leading before raft took it;
			// or the client agent never reached a server, or knew none.
			ret.Outcome = core.OutNotApplied
		}
		if resp.StatusCode >= 500 {
			c.Agent++
		}
	}
	return ret
}

func decodeBool(_ int, h http.Header, b []byte, ret *core.Ret) error {
	if err := json.Unmarshal(b, &ret.OK); err != nil {
		return err
	}
	ret.LockDelay = !ret.OK && h.Get("X-Tenure-Lock-Delay") != ""
	return nil
}

func (c *ApiClient) Create(cs model.CreateSession) *core.Ret {
	body := map[string]any{
		"Name": cs.Name, "Node": cs.Node, "Checks": cs.Checks, "NodeChecks": cs.Checks,
		"LockDelay": cs.LockDelay.String(), "Behavior": cs.Behavior, "TTL": cs.TTL,
	}
	if c.AgentNode != "" && cs.Node == c.AgentNode {
		delete(body, "Node")
	}
	b, _ := json.Marshal(body)
	return c.do(core.Call{Req: core.ReqCreate, Create: &cs}, http.MethodPut, "/v1/session/create", b,
		func(_ int, _ http.Header, b []byte, ret *core.Ret) error {
			var out struct{ ID string }
			if err := json.Unmarshal(b, &out); err != nil {
				return err
			}
			if out.ID == "" {
				return errors.New("no session ID")
			}
			ret.SessionID = out.ID
			return nil
		})
}

func (c *ApiClient) Destroy(id string) *core.Ret {
	return c.do(core.Call{Req: core.ReqDestroy, ID: id}, http.MethodPut, "/v1/session/destroy/"+id, nil, decodeBool)
}

func (c *ApiClient) Renew(id string) *core.Ret {
	return c.do(core.Call{Req: core.ReqRenew, ID: id}, http.MethodPut, "/v1/session/renew/"+id, nil,
		func(_ int, _ http.Header, b []byte, ret *core.Ret) error {
			ret.Found = true
			ret.OK = true
			return nil
		})
}

// decodeOneEntry reads a single-key GET answer into ret.
func decodeOneEntry(_ int, _ http.Header, b []byte, ret *core.Ret) error {
	var out []model.KVEntry
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	if len(out) != 1 {
		return fmt.Errorf("get answered %d entries", len(out))
	}
	ret.Found, ret.OK = true, true
	ret.Entries = []model.KVEntry{out[0]}
	return nil
}

func (c *ApiClient) Get(key string) *core.Ret {
	return c.do(core.Call{Req: core.ReqGet, Key: key}, http.MethodGet, "/v1/kv/"+key+"?consistent", nil,
		decodeOneEntry)
}

// getBlocking is a blocking read (S46): it answers once the key's index
// exceeds index, or after wait. The client's timeout must exceed wait.
func (c *ApiClient) GetBlocking(key string, index uint64, wait time.Duration) *core.Ret {
	q := url.Values{}
	q.Set("index", strconv.FormatUint(index, 10))
	q.Set("wait", wait.String())
	return c.do(core.Call{Req: core.ReqGet, Key: key}, http.MethodGet, "/v1/kv/"+key+"?"+q.Encode(), nil,
		decodeOneEntry)
}

// kv sends a stand-alone KV write: set, cas, lock, unlock, delete, delete-cas.
func (c *ApiClient) Kv(op model.KVOp) *core.Ret {
	q := url.Values{}
	method := http.MethodPut
	switch op.Verb {
	case model.KVCAS:
		q.Set("cas", strconv.FormatUint(op.Index, 10))
	case model.KVLock:
		q.Set("acquire", op.Session)
	case model.KVUnlock:
		q.Set("release", op.Session)
	case model.KVDelete:
		method = http.MethodDelete
	case model.KVDeleteCAS:
		method = http.MethodDelete
		q.Set("cas", strconv.FormatUint(op.Index, 10))
	}
	if op.Flags != 0 {
		q.Set("flags", strconv.FormatUint(op.Flags, 10))
	}
	path := "/v1/kv/" + op.Key
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body []byte
	if method == http.MethodPut {
		body = op.Value
	}
	decode := decodeBool
	if op.Verb == model.KVLock {
		decode = func(status int, h http.Header, b []byte, ret *core.Ret) error {
			return decodeAcquire(op, status, h, b, ret)
		}
	}
	return c.do(core.Call{Req: core.ReqKV, KV: &op}, method, path, body, decode)
}

// decodeAcquire is decodeBool plus the holding period a granted acquire
// names (S64), recorded as the answer's one entry so that the
// linearizability check compares it with the model's lock.
func decodeAcquire(op model.KVOp, status int, h http.Header, b []byte, ret *core.Ret) error {
	if err := decodeBool(status, h, b, ret); err != nil || !ret.OK {
		return err
	}
	lockIndex, err1 := strconv.ParseUint(h.Get("X-Tenure-Lock-Index"), 10, 64)
	modifyIndex, err2 := strconv.ParseUint(h.Get("X-Tenure-Modify-Index"), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("granted acquire without its holding period (S64): %w", err)
	}
	ret.Entries = []model.KVEntry{{Key: op.Key, Flags: op.Flags, LockIndex: lockIndex, Session: op.Session, ModifyIndex: modifyIndex}}
	return nil
}

// txn sends a transaction; 409 is a definite answer (the txn aborted).
func (c *ApiClient) Txn(ops []model.KVOp) *core.Ret {
	type kvOp struct {
		Verb    string
		Key     string
		Value   []byte `json:",omitempty"`
		Flags   uint64 `json:",omitempty"`
		Index   uint64 `json:",omitempty"`
		Session string `json:",omitempty"`
	}
	var wire []map[string]kvOp
	for _, op := range ops {
		wire = append(wire, map[string]kvOp{"KV": {Verb: string(op.Verb), Key: op.Key, Value: op.Value, Flags: op.Flags, Index: op.Index, Session: op.Session}})
	}
	b, _ := json.Marshal(wire)
	return c.do(core.Call{Req: core.ReqTxn, Txn: ops}, http.MethodPut, "/v1/txn", b,
		func(status int, _ http.Header, b []byte, ret *core.Ret) error {
			var out struct {
				Results []struct{ KV *model.KVEntry }
				Errors  []model.TxnError
			}
			if err := json.Unmarshal(b, &out); err != nil {
				return err
			}
			for _, r := range out.Results {
				if r.KV != nil {
					ret.Entries = append(ret.Entries, *r.KV)
				}
			}
			ret.TxnErrors = out.Errors
			if status == http.StatusConflict && len(out.Errors) == 0 {
				return errors.New("409 without errors")
			}
			ret.OK = status == http.StatusOK
			for _, e := range out.Errors {
				if bytes.Contains([]byte(e.What), []byte("due to lock delay")) {
					ret.LockDelay = true
				}
			}
			return nil
		})
}

// decodeNothing accepts any 200 body (agent check calls answer none).
func decodeNothing(_ int, _ http.Header, _ []byte, _ *core.Ret) error { return nil }

// RegisterCheck registers a passing agent TTL check on the client's own
// agent (PUT /v1/agent/check/register), as an application would.
func (c *ApiClient) RegisterCheck(id string, ttl time.Duration) *core.Ret {
	b, _ := json.Marshal(map[string]any{"ID": id, "Name": "sim client " + c.Name, "TTL": ttl.String(), "Status": "passing"})
	return c.do(core.Call{Req: core.ReqCheckRegister, ID: id}, http.MethodPut, "/v1/agent/check/register", b, decodeNothing)
}

// PassCheck marks the agent TTL check id passing, resetting its TTL on the
// agent.
func (c *ApiClient) PassCheck(id string) *core.Ret {
	return c.do(core.Call{Req: core.ReqCheckPass, ID: id}, http.MethodPut, "/v1/agent/check/pass/"+id, nil, decodeNothing)
}

// CreateQuery creates a prepared query bound to q.Session (S58).
func (c *ApiClient) CreateQuery(q model.PreparedQuery) *core.Ret {
	b, _ := json.Marshal(map[string]any{"Name": q.Name, "Session": q.Session, "Service": map[string]any{"Service": q.Service.Service}})
	return c.do(core.Call{Req: core.ReqQuery, Query: &q}, http.MethodPost, "/v1/query", b,
		func(_ int, _ http.Header, b []byte, ret *core.Ret) error {
			var out struct{ ID string }
			if err := json.Unmarshal(b, &out); err != nil {
				return err
			}
			if out.ID == "" {
				return errors.New("no query ID")
			}
			ret.QueryID = out.ID
			return nil
		})
}
