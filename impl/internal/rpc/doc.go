// Package rpc is the server-to-server connection on the server port, in
// Consul's shape: one TCP port per server whose connections say in their
// first byte what they carry (protoRaft for raft's own transport, protoMux
// for forwarded HTTP requests as net/rpc calls multiplexed on one plain
// connection).
//
// A forwarded request is the HTTP request a client sent to a follower or a
// client agent, framed (frame.go) with the node it came through (Origin). The
// serving side rebuilds an *http.Request whose context carries that Origin
// and runs the server's own HTTP API handler on it, so an origin can only be
// set by a server or an agent, never by an HTTP header (S2, S48).
//
// Pool is the sending side: per server address a fixed number of
// connections (connsPerServer), dialled lazily, shared by every caller and
// replaced when broken. A request is a net/rpc call, Forward.Request,
// encoded by hand (codec.go) in the frame encoding; net/rpc pairs answers
// with calls by sequence number, so the caller's goroutine writes its own
// request and one goroutine per connection reads every answer. A request's
// context ending sends Forward.Cancel with the request's ID, which ends the
// request's context on the serving side, so an abandoned blocking query
// stops on the leader too.
package rpc
