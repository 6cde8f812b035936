package rpc

import (
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// yamuxConfig is the session configuration both ends use: yamux's defaults
// (keepalive every 30 s, a 10 s write timeout, a 5 minute bound on a stream
// half-closed by one side) with its log lines going to logger.
//
// Known problems of yamux v0.1.2 (its issue tracker, checked when it was
// adopted) and how this package lives with them:
//   - a Stream.Write can fail with ErrConnectionWriteTimeout and leave the
//     stream open, so the reader on the other end waits (#142): a failed
//     exchange always closes its stream, and a server bounds the read of a
//     request (requestReadTimeout);
//   - reads blocked while a session shuts down can spin until the session
//     has closed its streams (reported against v0.1.2 by skycoin/skywire
//     #3923; #127 is the related fix): sessions are only closed through
//     Session.Close, which closes every stream before it returns;
//   - a package-level sync.Pool of *time.Timer (util.go) hands a timer made
//     inside one testing/synctest bubble to another, which the runtime stops
//     with "select on synctest channel from outside bubble": yamux cannot
//     run in the simulator, which uses ProtoSingle connections instead
//     (PoolConfig.Single).
func yamuxConfig(logger hclog.Logger) *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = nil
	c.Logger = logger.Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	c.EnableKeepAlive = true
	return c
}
