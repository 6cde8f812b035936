package model

import "fmt"

// StaleSequencerError says why a sequencer no longer names the current
// holder of its key (S40).
type StaleSequencerError struct {
	Seq    Sequencer
	Reason string
}

func (e *StaleSequencerError) Error() string {
	return fmt.Sprintf("sequencer for key %q (lock index %d, session %q) is stale: %s",
		e.Seq.Key, e.Seq.LockIndex, e.Seq.Session, e.Reason)
}

// CheckSequencer returns nil if seq is the key's current sequencer: the key
// exists, is held by seq.Session, and has seq.LockIndex. Otherwise it returns
// a *StaleSequencerError naming the first difference (S40, S43).
func (s *State) CheckSequencer(seq Sequencer) error {
	stale := func(format string, args ...any) error {
		return &StaleSequencerError{Seq: seq, Reason: fmt.Sprintf(format, args...)}
	}
	e, ok := s.KV[seq.Key]
	switch {
	case seq.Session == "":
		return stale("it names no session")
	case !ok:
		return stale("the key does not exist")
	case e.Session == "":
		return stale("the key is not held")
	case e.Session != seq.Session:
		return stale("the key is held by session %q", e.Session)
	case e.LockIndex != seq.LockIndex:
		return stale("the key's lock index is %d", e.LockIndex)
	}
	return nil
}
