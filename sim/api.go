package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tenurekv/tenure/model"
)

// apiClient speaks Consul's HTTP API over the simulated network and records
// every request as a call/ret pair in the trace. It talks to one server (its
// agent) and moves to the next one when that server cannot be reached.
type apiClient struct {
	name    string
	rec     *Recorder
	http    *http.Client
	servers []string // node names
	agent   int
	clock   *clientClock
	timeout time.Duration
}

// noLeaderBody is the server's answer to a request no leader took
// (impl/httpapi's Consul text, for impl.ErrNotLeader or no known leader).
const noLeaderBody = "No cluster leader"

// kvJSON is Consul's KV entry on the wire.
type kvJSON struct {
	Key         string
	Value       []byte
	Flags       uint64
	LockIndex   uint64
	Session     string
	CreateIndex uint64
	ModifyIndex uint64
}

func (k kvJSON) entry() model.KVEntry {
	return model.KVEntry{Key: k.Key, Value: k.Value, Flags: k.Flags, LockIndex: k.LockIndex,
		Session: k.Session, CreateIndex: k.CreateIndex, ModifyIndex: k.ModifyIndex}
}

func (c *apiClient) server() string { return c.servers[c.agent%len(c.servers)] }

// do sends one request, records it, and fills ret from the answer. decode
// reads a 200 body; status 4xx is a definite failure; anything else
// (5xx, transport error, timeout) leaves the outcome unknown.
func (c *apiClient) do(call Call, method, path string, body []byte, decode func(status int, h http.Header, b []byte, ret *Ret) error) *Ret {
	call.Op = c.rec.NextOp()
	call.Server = c.server()
	if c.clock != nil {
		call.ClientTime = c.clock.Now()
	}
	c.rec.Add(Event{Kind: KindCall, Node: c.name, Call: &call})
	ret := &Ret{Op: call.Op, Outcome: OutUnknown}
	defer func() { c.rec.Add(Event{Kind: KindRet, Node: c.name, Ret: ret}) }()

	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	u := "http://" + call.Server + ":" + httpPort + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		ret.Err = err.Error()
		return ret
	}
	resp, err := c.http.Do(req)
	if err != nil {
		ret.Err = err.Error()
		// A failed dial sent nothing (keep-alives are off: every request
		// dials afresh).
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			ret.Outcome = OutNotApplied
		}
		c.agent++ // try another server next time
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
	case resp.StatusCode == http.StatusOK || (resp.StatusCode == http.StatusConflict && call.Req == ReqTxn):
		ret.Outcome = OutOK
		if err := decode(resp.StatusCode, resp.Header, b, ret); err != nil {
			ret.Outcome, ret.Err = OutUnknown, "decode: "+err.Error()
		}
	case resp.StatusCode == http.StatusNotFound && (call.Req == ReqGet || call.Req == ReqRenew):
		ret.Outcome = OutOK
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		ret.Outcome, ret.Err = OutFail, string(b)
	default:
		ret.Err = fmt.Sprintf("%d: %s", resp.StatusCode, b)
		if resp.StatusCode == http.StatusInternalServerError && string(b) == noLeaderBody {
			// No server proposed it: a follower knew no leader, or the
			// leader's Apply found it was not leading before raft took it.
			ret.Outcome = OutNotApplied
		}
		if resp.StatusCode >= 500 {
			c.agent++
		}
	}
	return ret
}

func decodeBool(_ int, h http.Header, b []byte, ret *Ret) error {
	if err := json.Unmarshal(b, &ret.OK); err != nil {
		return err
	}
	ret.LockDelay = !ret.OK && h.Get("X-Tenure-Lock-Delay") != ""
	return nil
}

func (c *apiClient) create(cs model.CreateSession) *Ret {
	body := map[string]any{
		"Name": cs.Name, "Node": cs.Node, "Checks": cs.Checks, "NodeChecks": cs.Checks,
		"LockDelay": cs.LockDelay.String(), "Behavior": cs.Behavior, "TTL": cs.TTL,
	}
	b, _ := json.Marshal(body)
	return c.do(Call{Req: ReqCreate, Create: &cs}, http.MethodPut, "/v1/session/create", b,
		func(_ int, _ http.Header, b []byte, ret *Ret) error {
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

func (c *apiClient) destroy(id string) *Ret {
	return c.do(Call{Req: ReqDestroy, ID: id}, http.MethodPut, "/v1/session/destroy/"+id, nil, decodeBool)
}

func (c *apiClient) renew(id string) *Ret {
	return c.do(Call{Req: ReqRenew, ID: id}, http.MethodPut, "/v1/session/renew/"+id, nil,
		func(_ int, _ http.Header, b []byte, ret *Ret) error {
			ret.Found = true
			ret.OK = true
			return nil
		})
}

// decodeOneEntry reads a single-key GET answer into ret.
func decodeOneEntry(_ int, _ http.Header, b []byte, ret *Ret) error {
	var out []kvJSON
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	if len(out) != 1 {
		return fmt.Errorf("get answered %d entries", len(out))
	}
	ret.Found, ret.OK = true, true
	ret.Entries = []model.KVEntry{out[0].entry()}
	return nil
}

func (c *apiClient) get(key string) *Ret {
	return c.do(Call{Req: ReqGet, Key: key}, http.MethodGet, "/v1/kv/"+key+"?consistent", nil,
		decodeOneEntry)
}

// getBlocking is a blocking read (S46): it answers once the key's index
// exceeds index, or after wait. The client's timeout must exceed wait.
func (c *apiClient) getBlocking(key string, index uint64, wait time.Duration) *Ret {
	q := url.Values{}
	q.Set("index", strconv.FormatUint(index, 10))
	q.Set("wait", wait.String())
	return c.do(Call{Req: ReqGet, Key: key}, http.MethodGet, "/v1/kv/"+key+"?"+q.Encode(), nil,
		decodeOneEntry)
}

// kv sends a stand-alone KV write: set, cas, lock, unlock, delete, delete-cas.
func (c *apiClient) kv(op model.KVOp) *Ret {
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
	return c.do(Call{Req: ReqKV, KV: &op}, method, path, body, decodeBool)
}

// txn sends a transaction; 409 is a definite answer (the txn aborted).
func (c *apiClient) txn(ops []model.KVOp) *Ret {
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
	return c.do(Call{Req: ReqTxn, Txn: ops}, http.MethodPut, "/v1/txn", b,
		func(status int, _ http.Header, b []byte, ret *Ret) error {
			var out struct {
				Results []struct{ KV *kvJSON }
				Errors  []model.TxnError
			}
			if err := json.Unmarshal(b, &out); err != nil {
				return err
			}
			for _, r := range out.Results {
				if r.KV != nil {
					ret.Entries = append(ret.Entries, r.KV.entry())
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
