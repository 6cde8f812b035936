package bench

import (
	"slices"
	"testing"
	"time"
)

// TestTraceLabels: each point of the path is told by its stack, on the
// right server only, and an unrelated stack is no point.
func TestTraceLabels(t *testing.T) {
	for _, tc := range []struct {
		proc, kind, stack, want string
	}{
		{"L", stepWake, "internal/poll.(*FD).Read|github.com/tenurekv/tenure/impl/internal/rpc.readFrame|github.com/tenurekv/tenure/impl/internal/rpc.(*serverConn).readHeader|", "L.req"},
		{"F", stepWake, "internal/poll.(*FD).Read|github.com/tenurekv/tenure/impl/internal/rpc.readFrame|github.com/tenurekv/tenure/impl/internal/rpc.(*serverConn).readHeader|", ""},
		{"G", stepWake, "bufio.(*Reader).fill|github.com/hashicorp/raft.(*NetworkTransport).handleConn|", "G.ae"},
		{"L", stepWake, "bufio.(*Reader).fill|github.com/hashicorp/raft.(*NetworkTransport).handleConn|", ""},
		{"F", stepWake, "io.ReadFull|github.com/tenurekv/tenure/impl/internal/rpc.(*clientCodec).ReadResponseHeader|net/rpc.(*Client).input|", "F.answer"},
		{"L", stepSysEnter, "os.(*File).WriteAt|github.com/tenurekv/tenure/impl/internal/raftlog.(*zeroedFile).WriteAt|github.com/hashicorp/raft.(*Raft).dispatchLogs|", "L.store"},
		{"F", stepSysEnter, "github.com/tenurekv/tenure/impl/internal/raftlog.datasync|github.com/hashicorp/raft.(*Raft).appendEntries|", "F.fsync"},
		{"F", stepSysExit, "github.com/tenurekv/tenure/impl/internal/raftlog.datasync|github.com/hashicorp/raft.(*Raft).appendEntries|", "F.fsyncdone"},
		{"L", stepSysEnter, "github.com/tenurekv/tenure/impl/internal/raftlog.datasync|github.com/tenurekv/tenure/impl/internal/raftlog.(*LogSync).flush|", ""},
		{"F", stepSysExit, "net.(*netFD).Write|github.com/tenurekv/tenure/impl/internal/rpc.writeFrameBuffered|github.com/tenurekv/tenure/impl/internal/rpc.(*Pool).call|", "F.fwd"},
		{"L", stepSysExit, "net.(*netFD).Write|bufio.(*Writer).Flush|github.com/hashicorp/raft.sendRPC|", "L.aesent"},
		{"G", stepSysExit, "net.(*netFD).Write|bufio.(*Writer).Flush|github.com/hashicorp/raft.(*NetworkTransport).handleConn|", "G.acksent"},
		{"L", stepSysExit, "net.(*netFD).Write|bufio.(*Writer).Flush|github.com/hashicorp/raft.(*NetworkTransport).handleConn|", ""},
		{"L", stepSysExit, "net.(*netFD).Write|github.com/tenurekv/tenure/impl/internal/rpc.(*serverConn).WriteResponse|", "L.answered"},
		{"F", stepSysExit, "net.(*netFD).Write|net/http.checkConnErrorWriter.Write|net/http.(*response).finishRequest|", "F.resp"},
		{"F", stepSysEnter, "net.(*netFD).Write|net/http.checkConnErrorWriter.Write|", ""},
		{"F", stepWake, "runtime.selectgo|github.com/tenurekv/tenure/impl.(*Server).proposeCommand|", ""},
	} {
		if got := labelStep(tc.proc, tc.kind, tc.stack); got != tc.want {
			t.Errorf("%s %s %s: %q, want %q", tc.proc, tc.kind, tc.stack, got, tc.want)
		}
	}
}

// TestFollowOps: an operation is cut from one forward to the next, the
// follower that answers first makes the commit, and an operation missing a
// point is left out rather than measured across the gap.
func TestFollowOps(t *testing.T) {
	us := func(n int64) int64 { return n * 1000 }
	op := func(base int64, fAck, gAck int64) []traceStep {
		return []traceStep{
			{us(base + 0), "F.fwd"}, {us(base + 10), "L.req"}, {us(base + 60), "L.store"}, {us(base + 100), "L.aesent"},
			{us(base + 130), "G.ae"}, {us(base + 150), "F.ae"}, {us(base + 170), "G.fsync"}, {us(base + 190), "F.fsync"},
			{us(base + 350), "G.fsyncdone"}, {us(base + 360), "F.fsyncdone"},
			{us(base + gAck), "G.acksent"}, {us(base + fAck), "F.acksent"},
			{us(base + 500), "L.answered"}, {us(base + 520), "F.answer"}, {us(base + 570), "F.resp"},
		}
	}
	steps := mergeSteps(op(0, 390, 380), op(800, 370, 420))
	// A third operation whose leader never wrote its log (a missed event),
	// then the forward that closes it.
	broken := op(1600, 390, 380)
	broken = slices.DeleteFunc(broken, func(s traceStep) bool { return s.label == "L.store" })
	steps = mergeSteps(steps, broken, []traceStep{{us(2400), "F.fwd"}})

	got := followOps(steps)
	if len(got) != 2 {
		t.Fatalf("followed %d operations, want 2 (the third misses a point)", len(got))
	}
	usDurations := func(ns ...int64) []time.Duration {
		var d []time.Duration
		for _, n := range ns {
			d = append(d, time.Duration(us(n)))
		}
		return d
	}
	// G answers first in the first operation, F in the second.
	want := [][]time.Duration{
		usDurations(10, 50, 40, 30, 40, 180, 30, 120, 20, 50, 230),
		usDurations(10, 50, 40, 50, 40, 170, 10, 130, 20, 50, 230),
	}
	for i := range want {
		if len(got[i]) != len(traceSegments) {
			t.Fatalf("operation %d has %d segments, want %d", i, len(got[i]), len(traceSegments))
		}
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("operation %d: %v, want %v", i, got[i], want[i])
		}
	}
}
