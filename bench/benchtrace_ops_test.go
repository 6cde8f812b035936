package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// One lone client's operation through a follower, followed across the
// three servers' runtime traces (which share the machine's monotonic
// clock): F is the follower the client talks to, L the leader, G the other
// follower. Each point of the path is a system call or a wake-up whose
// goroutine stack names it; labelStep maps stacks to points.

// traceStep is one labelled point of a server's trace.
type traceStep struct {
	at    int64 // trace time, ns
	label string
}

// The transitions labelStep tells apart.
const (
	stepWake     = "wake"      // a goroutine blocked at stack becomes runnable
	stepSysEnter = "sys-enter" // a goroutine enters a system call at stack
	stepSysExit  = "sys-exit"  // it leaves the call it entered at stack
)

// labelStep names the point of the path that a transition at stack is on
// server proc (F, L or G), or "" for none. The stacks are Go's frames
// joined by "|", innermost first.
func labelStep(proc, kind, stack string) string {
	has := func(subs ...string) bool {
		for _, s := range subs {
			if !strings.Contains(stack, s) {
				return false
			}
		}
		return true
	}
	follower := proc == "F" || proc == "G"
	switch kind {
	case stepWake:
		switch {
		case proc == "L" && has("rpc.readFrame", "serverConn"):
			return "L.req" // the forwarded request arrives
		case follower && has("handleConn", "bufio.(*Reader).fill"):
			return proc + ".ae" // an AppendEntries arrives
		case proc == "F" && has("clientCodec).ReadResponseHeader"):
			return "F.answer" // the leader's answer arrives
		}
	case stepSysEnter:
		switch {
		case proc == "L" && has("zeroedFile).WriteAt", "dispatchLogs"):
			return "L.store" // the leader writes its log
		case follower && has("datasync", "appendEntries"):
			return proc + ".fsync"
		}
	case stepSysExit:
		switch {
		case proc == "F" && has("rpc.(*Pool).call", "netFD).Write"):
			return "F.fwd" // the request is forwarded
		case proc == "L" && has("sendRPC", "netFD).Write"):
			return "L.aesent"
		case follower && has("datasync", "appendEntries"):
			return proc + ".fsyncdone"
		case follower && has("NetworkTransport).handleConn", "netFD).Write"):
			return proc + ".acksent"
		case proc == "L" && has("serverConn).WriteResponse", "netFD).Write"):
			return "L.answered"
		case proc == "F" && has("checkConnErrorWriter"):
			return "F.resp" // the client's HTTP response is written
		}
	}
	return ""
}

// traceSegments are the legs of an operation, in order: the time from one
// point to the next.
var traceSegments = []string{
	"crossing follower → leader (forwarded request)",
	"leader: request to its log write",
	"leader: log write to the first AppendEntries sent",
	"crossing leader → the follower that answers first",
	"follower: AppendEntries in to its fsync",
	"follower: fsync",
	"follower: fsync to its answer sent",
	"crossing to the leader, and its commit, apply and answer",
	"crossing leader → forwarding follower",
	"follower: answer to HTTP response",
	"client's turnaround, and the follower's HTTP in and forward out",
}

// followOps splits the merged, time-ordered steps into operations (each
// from one forward to the next) and returns, per operation followed end to
// end, the duration of each of traceSegments. The follower that answers
// first makes the commit; an operation missing a point (a read that did
// not block, the traces' edges) is left out.
func followOps(steps []traceStep) [][]time.Duration {
	var starts []int
	for i, s := range steps {
		if s.label == "F.fwd" {
			starts = append(starts, i)
		}
	}
	var out [][]time.Duration
	for k := 0; k+1 < len(starts); k++ {
		op := steps[starts[k]:starts[k+1]]
		first := func(label string, after int64) (int64, bool) {
			for _, s := range op {
				if s.label == label && s.at >= after {
					return s.at, true
				}
			}
			return 0, false
		}
		at := []int64{steps[starts[k]].at}
		chain := func(labels ...string) bool {
			for _, l := range labels {
				t, ok := first(l, at[len(at)-1])
				if !ok {
					return false
				}
				at = append(at, t)
			}
			return true
		}
		if !chain("L.req", "L.store", "L.aesent") {
			continue
		}
		sent := at[len(at)-1]
		var best []int64
		for _, f := range []string{"F", "G"} {
			path := []int64{sent}
			ok := true
			for _, l := range []string{".ae", ".fsync", ".fsyncdone", ".acksent"} {
				t, found := first(f+l, path[len(path)-1])
				if !found {
					ok = false
					break
				}
				path = append(path, t)
			}
			if ok && (best == nil || path[4] < best[3]) {
				best = path[1:]
			}
		}
		if best == nil {
			continue
		}
		at = append(at, best...)
		if !chain("L.answered", "F.answer", "F.resp") {
			continue
		}
		at = append(at, steps[starts[k+1]].at)
		d := make([]time.Duration, len(at)-1)
		for i := range d {
			d[i] = time.Duration(at[i+1] - at[i])
		}
		out = append(out, d)
	}
	return out
}

// readTraceSteps reads one server's runtime trace and returns its
// labelled steps.
func readTraceSteps(r io.Reader, proc string) ([]traceStep, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("trace of %s: %w", proc, err)
	}
	blockedAt := map[trace.GoID]string{}
	sysAt := map[trace.GoID]string{}
	var out []traceStep
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("trace of %s: %w", proc, err)
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		g := st.Resource.Goroutine()
		from, to := st.Goroutine()
		var kind, stack string
		switch {
		case from == trace.GoRunning && to == trace.GoWaiting:
			blockedAt[g] = stackString(ev)
		case from == trace.GoWaiting && to == trace.GoRunnable:
			kind, stack = stepWake, blockedAt[g]
		case from == trace.GoRunning && to == trace.GoSyscall:
			sysAt[g] = stackString(ev)
			kind, stack = stepSysEnter, sysAt[g]
		case from == trace.GoSyscall:
			kind, stack = stepSysExit, sysAt[g]
		}
		if l := labelStep(proc, kind, stack); l != "" {
			out = append(out, traceStep{at: int64(ev.Time()), label: l})
		}
	}
}

func stackString(ev trace.Event) string {
	var b strings.Builder
	n := 0
	for f := range ev.Stack().Frames() {
		b.WriteString(f.Func)
		b.WriteByte('|')
		if n++; n == 24 {
			break
		}
	}
	return b.String()
}

// mergeSteps orders the steps of several servers by time.
func mergeSteps(perServer ...[]traceStep) []traceStep {
	all := slices.Concat(perServer...)
	slices.SortStableFunc(all, func(a, b traceStep) int { return cmp.Compare(a.at, b.at) })
	return all
}
