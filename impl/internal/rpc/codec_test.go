package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenurekv/tenure/impl/internal/pipenet"
)

// frameOf is payload with its length prefix.
func frameOf(payload ...[]byte) []byte {
	var p []byte
	for _, b := range payload {
		p = append(p, b...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}

// callMessage is a pool's Forward.Request message for req, framed.
func callMessage(t testing.TB, seq, id uint64, req *Request) []byte {
	head, err := encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.AppendUvarint([]byte{msgRequest}, seq)
	b = binary.AppendUvarint(b, id)
	return frameOf(b, head, req.Body)
}

// readCalls reads messages as a server connection does until an error,
// which it returns, giving back each request's slot as an answer would.
func readCalls(sc *serverConn) (calls int, err error) {
	for {
		var r rpc.Request
		if err := sc.ReadRequestHeader(&r); err != nil {
			return calls, err
		}
		switch r.ServiceMethod {
		case methodRequest:
			var a ForwardArgs
			err := sc.ReadRequestBody(&a)
			<-sc.slots
			if err != nil {
				return calls, err
			}
			sc.done(a.id)
		default:
			var id uint64
			if err := sc.ReadRequestBody(&id); err != nil {
				return calls, err
			}
		}
		calls++
	}
}

func serverConnOver(srv *Server, data []byte) *serverConn {
	sc := newServerConn(srv, nil)
	sc.r = bufio.NewReader(bytes.NewReader(data))
	return sc
}

// TestServerCodecRejects: malformed messages are errors wrapping errFrame,
// and the connection reads nothing after one (the next header fails too).
func TestServerCodecRejects(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	good := callMessage(t, 1, 7, &Request{Method: "GET", URI: "/v1/kv/k"})
	if n, err := readCalls(serverConnOver(srv, good)); n != 1 || !errors.Is(err, io.EOF) {
		t.Fatalf("a good call: %d read, then %v", n, err)
	}
	for name, data := range map[string][]byte{
		"unknown kind":   frameOf([]byte{9, 1, 1}),
		"duplicate ID":   append(append(callMessage(t, 1, 7, &Request{Method: "GET", URI: "/a"}), good...), good...),
		"bad request":    frameOf([]byte{msgRequest, 1, 7, frameVersion + 1}),
		"cancel tail":    frameOf([]byte{msgCancel, 1, 7, 0}),
		"oversized":      binary.BigEndian.AppendUint32(nil, maxRequestFrame+maxMessageOverhead+1),
		"truncated head": frameOf([]byte{msgRequest}),
	} {
		sc := serverConnOver(srv, data)
		if name == "duplicate ID" {
			// The first request with ID 7 is still running.
			var r rpc.Request
			var a ForwardArgs
			if err := sc.ReadRequestHeader(&r); err != nil {
				t.Fatal(err)
			}
			if err := sc.ReadRequestBody(&a); err != nil {
				t.Fatal(err)
			}
		}
		_, err := readCalls(sc)
		if !errors.Is(err, errFrame) {
			t.Errorf("%s: read ended with %v, want an errFrame", name, err)
		}
		var r rpc.Request
		if err2 := sc.ReadRequestHeader(&r); !errors.Is(err2, errFrame) {
			t.Errorf("%s: the next header read gave %v", name, err2)
		}
	}
}

// TestServerBoundsOutstanding: a sender that keeps more than
// maxOutstanding requests running on one connection is not read further
// until one of them ends. The pool never does this; a raw net/rpc client
// on the codec does.
func TestServerBoundsOutstanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := pipenet.Listen(8300)
		srv := NewServer(nil)
		var started atomic.Int32
		release := make(chan struct{})
		srv.SetHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started.Add(1)
			<-release
		}))
		d := NewDemux(ln, srv, nil, nil, nil)
		defer d.Close()
		conn, _ := ln.Dial(context.Background(), "")
		if _, err := conn.Write([]byte{protoMux}); err != nil {
			t.Fatal(err)
		}
		client := rpc.NewClientWithCodec(newClientCodec(conn))
		defer client.Close()
		req := &Request{Method: "GET", URI: "/v1/kv/k?index=1"}
		head, _ := encodeRequest(req)
		var calls []*rpc.Call
		for i := range maxOutstanding + 1 {
			calls = append(calls, client.Go(methodRequest, &ForwardArgs{id: uint64(i + 1), request: req, head: head},
				new(Response), make(chan *rpc.Call, 1)))
		}
		synctest.Wait()
		if n := started.Load(); n != maxOutstanding {
			t.Fatalf("%d requests running on one connection, want %d", n, maxOutstanding)
		}
		release <- struct{}{}
		synctest.Wait()
		if n := started.Load(); n != maxOutstanding+1 {
			t.Fatalf("%d requests started after one ended, want %d", n, maxOutstanding+1)
		}
		close(release)
		for i, c := range calls {
			<-c.Done
			if c.Error != nil || c.Reply.(*Response).Status != http.StatusOK {
				t.Fatalf("call %d: %v %+v", i, c.Error, c.Reply)
			}
		}
	})
}

// TestBadMessageClosesConnection: on the wire, a malformed message ends
// the connection.
func TestBadMessageClosesConnection(t *testing.T) {
	_, addr := port(t, echo)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append([]byte{protoMux}, frameOf([]byte{9, 1, 1})...)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatalf("read %d bytes after a bad message, want the connection closed", n)
	}
}

// FuzzCodecs: whatever a peer sends, both ends' decoding ends in an error
// about the frame or the stream's end, never a panic.
func FuzzCodecs(f *testing.F) {
	req := &Request{Origin: Origin{Node: "a", Forwarded: true}, Method: "PUT", URI: "/v1/kv/x?cas=1",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("v")}
	f.Add(append(callMessage(f, 1, 1, req), frameOf([]byte{msgCancel, 2, 1})...))
	resp := &Response{Status: 200, Header: http.Header{"X-Consul-Index": {"3"}}, Body: []byte("true")}
	head, _ := encodeResponse(resp)
	f.Add(append(frameOf([]byte{1, 0}, head, resp.Body), frameOf([]byte{2, 5}, []byte("nope!"))...))
	f.Add([]byte{})
	f.Add(frameOf([]byte{msgRequest, 0xff}))
	srv := NewServer(nil)
	f.Cleanup(func() { _ = srv.Close() })
	ok := func(err error) bool {
		return errors.Is(err, errFrame) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := readCalls(serverConnOver(srv, data)); !ok(err) {
			t.Fatalf("server side: %v", err)
		}
		cc := &clientCodec{conn: nopConn{}, r: bufio.NewReader(bytes.NewReader(data))}
		for {
			var r rpc.Response
			err := cc.ReadResponseHeader(&r)
			if err == nil {
				var resp Response
				if r.Error != "" {
					err = cc.ReadResponseBody(nil)
				} else {
					err = cc.ReadResponseBody(&resp)
				}
			}
			if err != nil {
				if !ok(err) {
					t.Fatalf("client side: %v", err)
				}
				return
			}
		}
	})
}

// nopConn stands for the connection a fuzzed client codec closes.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// TestBadAnswerClosesConnection: an answer the pool cannot decode fails
// its call and ends the connection, so later calls fail at once (and the
// pool dials anew) instead of trusting that server further.
func TestBadAnswerClosesConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		go func() {
			r := bufio.NewReader(server)
			p, err := readFrame(r, maxRequestFrame+maxMessageOverhead)
			if err != nil {
				return
			}
			d := decoder{p: p[1:]}
			seq := d.uvarint()
			// Status 99 does not decode.
			_, _ = server.Write(frameOf(binary.AppendUvarint(nil, seq), []byte{0, frameVersion, 99, 0, 0}))
			_, _ = io.Copy(io.Discard, r)
		}()
		c := rpc.NewClientWithCodec(newClientCodec(client))
		defer c.Close()
		req := &Request{Method: "GET", URI: "/v1/kv/k"}
		head, _ := encodeRequest(req)
		if err := c.Call(methodRequest, &ForwardArgs{id: 1, request: req, head: head}, new(Response)); err == nil || !isBroken(err) {
			t.Fatalf("a bad answer gave %v, want a broken connection", err)
		}
		synctest.Wait()
		if err := c.Call(methodRequest, &ForwardArgs{id: 2, request: req, head: head}, new(Response)); !errors.Is(err, rpc.ErrShutdown) {
			t.Fatalf("the next call gave %v, want rpc.ErrShutdown", err)
		}
	})
}

// TestCodecClosesOnce: after the codec closed its connection on an error,
// net/rpc's Client.Close (hence Pool.Close, which a simulated cluster's
// shutdown checks) does not fail on a TCP connection already closed.
func TestCodecClosesOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cc := newClientCodec(conn)
	if err := cc.WriteRequest(&rpc.Request{ServiceMethod: "Forward.Other"}, "no such argument"); err == nil {
		t.Fatal("an argument of no known type was written")
	}
	if err := rpc.NewClientWithCodec(cc).Close(); err != nil {
		t.Fatalf("Close after the codec closed the connection: %v", err)
	}
}
