package server

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// failingStable is a stable store whose writes fail.
type failingStable struct{ raft.StableStore }

var errDiskGone = errors.New("input/output error")

func (failingStable) Set([]byte, []byte) error       { return errDiskGone }
func (failingStable) SetUint64([]byte, uint64) error { return errDiskGone }

// TestFailedStableWriteStopsTheServer: where raft would panic on a term it
// cannot save, the server stops through Config.Fatal, once, and raft's
// goroutine waits for the shutdown instead of going on before it.
func TestFailedStableWriteStopsTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var told []error
		s := &Server{logger: hclog.NewNullLogger(), shutdownCh: make(chan struct{})}
		s.cfg.Fatal = func(err error) { told = append(told, err) }
		st := stopOnStableError{StableStore: failingStable{}, s: s}
		returned := make(chan error, 2)
		go func() { returned <- st.SetUint64([]byte("CurrentTerm"), 2) }()
		go func() { returned <- st.Set([]byte("LastVoteCand"), []byte("n1")) }()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("a failed term write returned (%v) before the server shut down", err)
		default:
		}
		if len(told) != 1 || !errors.Is(told[0], errDiskGone) || !errors.Is(told[0], errStopped) {
			t.Fatalf("Fatal told %v, want the write's error once", told)
		}
		close(s.shutdownCh)
		for range 2 {
			if err := <-returned; err != nil {
				t.Fatalf("after the shutdown the write answered %v, want nil (raft must not panic)", err)
			}
		}
	})
}

// TestFailedStableWriteWithoutFatalPanics: a real server (no Fatal) stops
// the process, as raft's own panic would have.
func TestFailedStableWriteWithoutFatalPanics(t *testing.T) {
	s := &Server{logger: hclog.NewNullLogger(), shutdownCh: make(chan struct{})}
	defer func() {
		if p := recover(); p == nil {
			t.Fatal("a failed term write without Fatal did not panic")
		}
	}()
	_ = stopOnStableError{StableStore: failingStable{}, s: s}.SetUint64([]byte("CurrentTerm"), 2)
}
