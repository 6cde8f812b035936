package rpc

import (
	"context"
	"fmt"
	"net/http"
)

// Forwarder sends a request to the server at addr (its server port) and
// returns the server's answer. req.Origin is the sender's to set: the node
// of the agent the client talked to, and whether a server forwards it.
type Forwarder interface {
	Forward(ctx context.Context, addr string, req *Request) (*Response, error)
}

var _ Forwarder = (*Pool)(nil)

// Local is a Forwarder to handlers in this process, by address: the
// in-memory stand-in for a Pool in tests, and how an agent's anti-entropy
// reaches its own server's API. Requests and answers go through the frame
// encoding, so they meet the same bounds as on the wire.
type Local map[string]http.Handler

var _ Forwarder = Local(nil)

// Forward implements Forwarder.
func (l Local) Forward(ctx context.Context, addr string, req *Request) (*Response, error) {
	h, ok := l[addr]
	if !ok {
		return nil, fmt.Errorf("forward to %s: no such server", addr)
	}
	in, err := roundTripRequest(req)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	resp := handle(ctx, h, in)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	out, err := roundTripResponse(resp)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	return out, nil
}

func roundTripRequest(r *Request) (*Request, error) {
	head, err := encodeRequest(r)
	if err != nil {
		return nil, err
	}
	return parseRequest(append(head, r.Body...))
}

func roundTripResponse(r *Response) (*Response, error) {
	head, err := encodeResponse(r)
	if err != nil {
		return nil, err
	}
	return parseResponse(append(head, r.Body...))
}
