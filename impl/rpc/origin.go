package rpc

import "context"

// Origin says who a forwarded request came through: the node of the agent
// the client talked to, and whether a server already forwarded it (a
// request a server forwarded is never forwarded again, so two servers that
// each believe the other leads cannot pass a request back and forth).
type Origin struct {
	Node      string
	Forwarded bool
}

type originKey struct{}

// WithOrigin is ctx carrying o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom is the origin ctx carries; ok is false for a request that
// arrived over plain HTTP.
func OriginFrom(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok
}
