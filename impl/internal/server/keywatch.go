package server

// KeyWatcher is an optional Backend capability: a channel closed at the next
// applied change of one KV key. A blocking read of a single key waits on it
// instead of Changed, so a write wakes the reads of the keys it changed and
// not every blocked read in the server (S46). Call stop when done waiting.
type KeyWatcher interface {
	WatchKey(key string) (changed <-chan struct{}, stop func())
}

var _ KeyWatcher = (*Server)(nil)

// WatchKey implements KeyWatcher. Take the channel before reading the key.
func (s *Server) WatchKey(key string) (<-chan struct{}, func()) { return s.fsm.WatchKey(key) }
