// Package rpc is the server-to-server connection on the server port, in
// Consul's shape: one TCP port per server whose connections say in their
// first byte what they carry (ProtoRaft for raft's own transport, ProtoMux
// for forwarded HTTP requests multiplexed over one yamux session, ProtoSingle
// for one forwarded request on its own connection).
//
// A forwarded request is the HTTP request a client sent to a follower or a
// client agent, framed (frame.go) with the node it came through (Origin). The
// serving side rebuilds an *http.Request whose context carries that Origin
// and runs the server's own HTTP API handler on it, so an origin can only be
// set by a server or an agent, never by an HTTP header (S2, S48).
//
// Pool is the sending side: one yamux session per server address, dialled
// lazily and replaced when it dies, one stream per request. A request's
// context ending closes its stream, which the serving side sees as the end
// of the request's context, so an abandoned blocking query stops on the
// leader too.
package rpc
