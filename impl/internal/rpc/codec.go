package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"
)

// The messages of a protoMux connection, each a length-prefixed frame
// (writeFrame). From the pool to the server:
//
//	kind (1 byte: msgRequest or msgCancel), seq (uvarint), ID (uvarint),
//	and for msgRequest an encoded Request (encodeRequest, then the body)
//
// and from the server back:
//
//	seq (uvarint), an error text (uvarint length, then the text; empty
//	when the call succeeded), and for a successful Forward.Request an
//	encoded Response (encodeResponse, then the body).
//
// seq is net/rpc's number of the call, which pairs an answer with its call;
// ID is the pool's number of a forwarded request, which a Cancel names.
// Both are per connection. The codecs are written by hand for these two
// argument types: gob would cost reflection and a type preamble per
// connection, for nothing.
const (
	msgRequest byte = 1
	msgCancel  byte = 2

	methodRequest = "Forward.Request"
	methodCancel  = "Forward.Cancel"

	maxErrorText = 64 << 10
	// What a message adds to a frame: kind, two uvarints, an error text.
	maxMessageOverhead = 1 + 2*binary.MaxVarintLen64 + binary.MaxVarintLen64 + maxErrorText
)

// Bounds of a connection: at most maxOutstanding forwarded requests run at
// once per connection (the server reads no further until one ends), and a
// write stalled for writeTimeout breaks the connection. The pool keeps
// within the bound itself, counting a request it gave up on as ended once
// its Cancel is written, which the server reads before any later request:
// so a Cancel is never stuck behind requests waiting for room.
const (
	maxOutstanding = 512
	writeTimeout   = 10 * time.Second
	connBufferSize = 16 << 10
)

// ForwardArgs are the arguments of Forward.Request. They are exported only
// because net/rpc wants argument types that are.
type ForwardArgs struct {
	id      uint64
	request *Request

	head  []byte          // the pool's encodeRequest of request
	ctx   context.Context // the server's context of the request
	conn  *serverConn     // the server's connection it came on
	reply *Answer         // where the server's handler answers
}

// run runs the request on the server's handler: the worker's job.
func (a *ForwardArgs) run() { a.conn.srv.run(a.ctx, a.request, a.reply) }

// clientCodec is the pool's end of a protoMux connection. net/rpc calls
// WriteRequest under its own lock and the reads from its one reader
// goroutine.
type clientCodec struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	buf  []byte // a message's head being written

	pending []byte // the rest of the answer whose header was read

	// ready counts calls about to be written: the pool adds one before
	// each Go, WriteRequest takes it off. A write that leaves it above zero
	// is not flushed, as another one follows at once and flushes both. A
	// call net/rpc refuses unwritten (its client shut down) is never taken
	// off, but nothing is written on that client again. Calls not counted
	// (tests driving the codec directly) only make writes flush more often.
	ready atomic.Int32

	closeOnce sync.Once
	closeErr  error
}

func newClientCodec(conn net.Conn) *clientCodec {
	return &clientCodec{conn: conn, r: bufio.NewReaderSize(conn, connBufferSize),
		w: bufio.NewWriterSize(conn, connBufferSize)}
}

func (c *clientCodec) WriteRequest(r *rpc.Request, body any) error {
	var err error
	switch a := body.(type) {
	case *ForwardArgs:
		b := binary.AppendUvarint(append(c.buf[:0], msgRequest), r.Seq)
		b = binary.AppendUvarint(b, a.id)
		c.buf = append(b, a.head...)
		err = c.write(c.buf, a.request.Body)
	case uint64:
		b := binary.AppendUvarint(append(c.buf[:0], msgCancel), r.Seq)
		c.buf = binary.AppendUvarint(b, a)
		err = c.write(c.buf, nil)
	default:
		err = fmt.Errorf("rpc: no encoding for %s's %T", r.ServiceMethod, body)
	}
	if err != nil {
		// net/rpc fails just this call; the connection, maybe cut in the
		// middle of a frame, is closed so that every call sees it broken.
		_ = c.Close()
	}
	return err
}

// write buffers a frame and flushes it unless another call is about to be
// written behind it (see ready): one write to the socket for several
// calls, and none waits for a later one.
func (c *clientCodec) write(head, body []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	last := c.ready.Add(-1) <= 0
	return writeFrameBuffered(c.w, head, body, last)
}

func (c *clientCodec) ReadResponseHeader(r *rpc.Response) error {
	p, err := readFrame(c.r, maxResponseFrame+maxMessageOverhead)
	if err != nil {
		// Never io.EOF itself (readFrame wraps it): net/rpc would end the
		// calls already sent on a client closed locally with ErrShutdown,
		// which Pool.Forward takes to mean that nothing was sent, and
		// retries (TestForwardNeverResendsASentRequest).
		return err
	}
	d := decoder{p: p}
	r.Seq = d.uvarint()
	r.Error = d.string(maxErrorText, "error text")
	if d.err != nil {
		return d.err
	}
	c.pending = d.p
	return nil
}

func (c *clientCodec) ReadResponseBody(body any) error {
	err := c.readBody(body)
	if err != nil {
		// net/rpc would fail just this call and read on; a server that
		// sends what cannot be decoded is not trusted further.
		_ = c.Close()
	}
	return err
}

func (c *clientCodec) readBody(body any) error {
	p := c.pending
	c.pending = nil
	switch b := body.(type) {
	case nil:
		return nil // an error answer, or a call nobody waits for
	case *Response:
		return decodeResponse(p, b)
	case *struct{}:
		if len(p) != 0 {
			return frameErr("%d bytes after an empty answer", len(p))
		}
		return nil
	default:
		return fmt.Errorf("rpc: no decoding for %T", body)
	}
}

// Close closes the connection once: the codec may have closed it on an
// error before net/rpc's Client.Close, which must not then fail.
func (c *clientCodec) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.conn.Close() })
	return c.closeErr
}

// serverConn is the server's end of a protoMux connection: net/rpc's
// ServerCodec plus the requests running on it, by the IDs the pool gave
// them, so that a Cancel can end one.
type serverConn struct {
	srv  *Server
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	buf  []byte
	err  error  // once set, every header read fails with it
	kind byte   // of the message whose header was read
	rest []byte // its arguments
	node string // origin of the last request, reused while it stays the same

	slots chan struct{} // one per running Forward.Request

	// ready counts answers about to be written (as clientCodec.ready):
	// one is added when a call's answer is decided, which net/rpc then
	// writes under its lock, and WriteResponse takes it off.
	ready atomic.Int32

	mu      sync.Mutex
	closed  bool
	running map[uint64]context.CancelFunc
}

func newServerConn(s *Server, conn net.Conn) *serverConn {
	return &serverConn{srv: s, conn: conn, r: bufio.NewReaderSize(conn, connBufferSize),
		w: bufio.NewWriterSize(conn, connBufferSize), slots: make(chan struct{}, maxOutstanding),
		running: map[uint64]context.CancelFunc{}}
}

func (c *serverConn) ReadRequestHeader(r *rpc.Request) error {
	err := c.readHeader(r)
	if err != nil {
		// No more calls will be read: end the running ones, which net/rpc
		// waits for before it closes the connection.
		c.err = err
		c.stop()
	}
	return err
}

func (c *serverConn) readHeader(r *rpc.Request) error {
	if c.err != nil {
		return c.err
	}
	p, err := readFrame(c.r, maxRequestFrame+maxMessageOverhead)
	if err != nil {
		return err
	}
	d := decoder{p: p}
	c.kind = d.byte()
	r.Seq = d.uvarint()
	if d.err != nil {
		return d.err
	}
	switch c.kind {
	case msgRequest:
		r.ServiceMethod = methodRequest
		// The pool keeps within maxOutstanding; a sender that does not
		// waits here, and its connection with it.
		select {
		case c.slots <- struct{}{}:
		case <-c.srv.ctx.Done():
			return c.srv.ctx.Err()
		}
	case msgCancel:
		r.ServiceMethod = methodCancel
	default:
		return frameErr("message kind %d", c.kind)
	}
	c.rest = d.p
	return nil
}

// ReadRequestBody decodes the arguments. A Forward.Request's context is
// made and registered here, in the reading goroutine, so that a Cancel read
// after it always finds it.
func (c *serverConn) ReadRequestBody(body any) error {
	err := c.readBody(body)
	if _, ok := body.(*ForwardArgs); !ok || err != nil {
		// net/rpc answers this call at once: an error from this goroutine,
		// a Cancel from one it starts (the method has nothing to do). A
		// Forward.Request's answer is ready when its handler returns.
		c.ready.Add(1)
	}
	return err
}

func (c *serverConn) readBody(body any) error {
	d := decoder{p: c.rest}
	c.rest = nil
	id := d.uvarint()
	if d.err != nil {
		c.err = d.err
		return d.err
	}
	switch a := body.(type) {
	case nil:
		return nil
	case *ForwardArgs:
		req, err := decodeRequest(d.p, &c.node)
		if err != nil {
			c.err = err
			return err
		}
		ctx, cancel := context.WithCancel(c.srv.ctx)
		if err := c.register(id, cancel); err != nil {
			cancel()
			c.err = err
			return err
		}
		*a = ForwardArgs{id: id, request: req, ctx: ctx, conn: c}
		return nil
	case *uint64:
		if len(d.p) != 0 {
			c.err = frameErr("%d bytes after a cancel", len(d.p))
			return c.err
		}
		*a = id
		c.cancel(id)
		return nil
	default:
		return fmt.Errorf("rpc: no decoding for %T", body)
	}
}

// register records the cancel func of request id. A connection that has
// stopped reading gets its requests' contexts ended at once.
func (c *serverConn) register(id uint64, cancel context.CancelFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.running[id]; dup {
		return frameErr("request ID %d is already running", id)
	}
	if c.closed {
		cancel()
	}
	c.running[id] = cancel
	return nil
}

// cancel ends request id's context if it is still running.
func (c *serverConn) cancel(id uint64) {
	c.mu.Lock()
	cancel := c.running[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// done forgets request id, which has ended.
func (c *serverConn) done(id uint64) {
	c.mu.Lock()
	cancel := c.running[id]
	delete(c.running, id)
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// stop ends every running request's context: nothing more is read from
// the connection, so no Cancel could reach them.
func (c *serverConn) stop() {
	c.mu.Lock()
	c.closed = true
	for _, cancel := range c.running {
		cancel()
	}
	c.mu.Unlock()
}

// WriteResponse sends an answer; net/rpc calls it under its own lock.
func (c *serverConn) WriteResponse(r *rpc.Response, body any) error {
	if r.ServiceMethod == methodRequest {
		// Every Forward.Request read (even one whose arguments were bad)
		// is answered exactly once, so its slot is given back here.
		defer func() { <-c.slots }()
	}
	msg := r.Error
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText]
	}
	b := binary.AppendUvarint(c.buf[:0], r.Seq)
	b = binary.AppendUvarint(b, uint64(len(msg)))
	b = append(b, msg...)
	var tail []byte
	if a, ok := body.(*Answer); ok && msg == "" {
		prefix := b
		var err error
		if b, tail, err = a.appendTo(prefix); err != nil {
			c.srv.logger.Warn("rpc: answer cannot be forwarded", "error", err)
			resp := errorResponse(http.StatusInternalServerError, "answer cannot be forwarded: "+err.Error())
			b, _ = appendResponse(prefix, resp) // a short plain-text 500 always encodes
			tail = resp.Body
		}
		// Written or not, the frame is done with the answer's buffers.
		defer a.release()
	}
	c.buf = b
	_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	last := c.ready.Add(-1) <= 0
	if err := writeFrameBuffered(c.w, b, tail, last); err != nil {
		// The pool would wait for this answer until the connection died:
		// make it die now.
		_ = c.conn.Close()
		return err
	}
	return nil
}

func (c *serverConn) Close() error { return c.conn.Close() }

// writeFrameBuffered writes a length-prefixed frame of head and body to w,
// and flushes w if flush (else a full buffer is all that reaches the
// socket, and the next frame's writer flushes).
func writeFrameBuffered(w *bufio.Writer, head, body []byte, flush bool) error {
	// The length is built in the writer's own free space (no array that
	// escapes into Write); Write then copies it onto itself.
	_, _ = w.Write(binary.BigEndian.AppendUint32(w.AvailableBuffer(), uint32(len(head)+len(body))))
	_, _ = w.Write(head)
	_, err := w.Write(body) // bufio's errors stick: this is the first one
	if err == nil && flush {
		err = w.Flush()
	}
	if err != nil {
		return fmt.Errorf("write rpc frame: %w", err)
	}
	return nil
}

// forwardService is the net/rpc service "Forward" of a Server.
type forwardService struct{ s *Server }

// Request runs a forwarded request. Its answer is sent even when the pool
// gave up on it (then it is an error), as net/rpc's client keeps every call
// until it is answered.
func (f *forwardService) Request(a *ForwardArgs, reply *Answer) error {
	// Deferred first, so run last: the answer is ready to be written.
	defer a.conn.ready.Add(1)
	defer a.conn.done(a.id)
	a.reply = reply
	f.s.workers.run(a) // a.run, on a worker
	if err := a.ctx.Err(); err != nil {
		reply.release() // net/rpc sends the error, not the reply
		return err
	}
	return nil
}

// Cancel ends a running Forward.Request; the work is done as it is read
// (serverConn.ReadRequestBody), in order with the requests.
func (f *forwardService) Cancel(id uint64, _ *struct{}) error { return nil }

// newRPCServer is the net/rpc server of s: the service Forward.
func newRPCServer(s *Server) (*rpc.Server, error) {
	r := rpc.NewServer()
	if err := r.RegisterName("Forward", &forwardService{s: s}); err != nil {
		return nil, fmt.Errorf("register the forward service: %w", err)
	}
	return r, nil
}

// isBroken tells whether a call's error means its connection is gone
// (rather than the server answering with an error).
func isBroken(err error) bool {
	var se rpc.ServerError
	return err != nil && !errors.As(err, &se)
}
