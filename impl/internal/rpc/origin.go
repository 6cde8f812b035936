package rpc

import "context"

// Origin says where a forwarded request came from: the node of the agent
// the client talked to, whether a server already forwarded it (a request a
// server forwarded is never forwarded again, so two servers that each
// believe the other leads cannot pass a request back and forth), the
// caller's ACL token and, where a handler needs it, the caller's address.
//
// The sender sets every field; the frame carries them as they were set and
// no HTTP header can set them. What vouches for the sender is the server
// port itself: with tls.internal_rpc.verify_incoming only peers holding a
// certificate from the CA reach it.
type Origin struct {
	Node      string
	Forwarded bool
	// Token is the ACL token the caller presented to the first agent
	// (RequestToken), passed on unchanged by every hop; empty when it
	// presented none. For a forwarded request it, not the forwarded
	// headers, says who is asking.
	Token string
	// SourceIP is the caller's address as the first agent saw it (the
	// first X-Forwarded-For entry, else the connection's), for a prepared
	// query's "_ip" (S89); sent only with requests that can use it.
	SourceIP string
}

type originKey struct{}

// withOrigin is ctx carrying o.
func withOrigin(ctx context.Context, o Origin) context.Context {
	return &originCtx{Context: ctx, origin: o}
}

// originCtx is context.WithValue for the origin in one allocation: Value
// hands out a pointer into it, where an Origin in an interface would be a
// second.
type originCtx struct {
	context.Context
	origin Origin
}

func (c *originCtx) Value(key any) any {
	if _, ok := key.(originKey); ok {
		return &c.origin
	}
	return c.Context.Value(key)
}

// OriginFrom is the origin ctx carries; ok is false for a request that
// arrived over plain HTTP.
func OriginFrom(ctx context.Context) (Origin, bool) {
	if o, ok := ctx.Value(originKey{}).(*Origin); ok {
		return *o, true // a copy: the context's stays as it was set
	}
	return Origin{}, false
}
