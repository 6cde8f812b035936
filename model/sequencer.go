package model

import "fmt"

// StaleSequencerError says why a sequencer no longer names the current
// holder of its key (S40). Its text is the txn check-sequencer failure (S43).
type StaleSequencerError struct {
	Seq Sequencer
	// Exists is false when the key is missing; otherwise Session and
	// LockIndex are the key's current holder and lock index.
	Exists    bool
	Session   string
	LockIndex uint64
}

func (e *StaleSequencerError) Error() string {
	switch {
	case !e.Exists:
		return fmt.Sprintf("failed sequencer check, key %q doesn't exist", e.Seq.Key)
	case e.Session != e.Seq.Session:
		return fmt.Sprintf("failed sequencer check for key %q, current session %q != %q", e.Seq.Key, e.Session, e.Seq.Session)
	default:
		return fmt.Sprintf("failed sequencer check for key %q, current lock index %d != %d", e.Seq.Key, e.LockIndex, e.Seq.LockIndex)
	}
}

// CheckSequencer returns nil if seq is the key's current sequencer: the key
// exists, is held by seq.Session, and has seq.LockIndex. Otherwise it returns
// a *StaleSequencerError naming the first difference, in the order
// existence, session, lock index (S40, S43). An empty Session never matches:
// an unheld key validates no sequencer.
func (s *State) CheckSequencer(seq Sequencer) error {
	e, ok := s.kv[seq.Key]
	if ok && seq.Session != "" && e.Session == seq.Session && e.LockIndex == seq.LockIndex {
		return nil
	}
	return &StaleSequencerError{Seq: seq, Exists: ok, Session: e.Session, LockIndex: e.LockIndex}
}
