package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// FaultKind names a kind of fault a run can inject.
type FaultKind string

// The fault kinds a run draws from. Process faults hit a process that
// believes something (inside a Begin) when the fault starts, if one does:
// the holder; otherwise any process still running.
const (
	// ProcessPause stops a process's host (the process and its client
	// agent, network included) for 3 to 45 s, as a long GC pause or a
	// stopped VM would, then lets it run on as if nothing happened.
	ProcessPause FaultKind = "process-pause"
	// ProcessCrash stops a process and its client agent for good, without
	// releasing anything. A run keeps at least one process alive.
	ProcessCrash FaultKind = "process-crash"
	// ProcessPartition cuts a process's host off from the servers for 5
	// to 40 s (its own clock may run slow meanwhile); the rest of its
	// code, and any resource it calls in Go, keeps running.
	ProcessPartition FaultKind = "process-partition"
	// Partition splits the servers into a majority and a minority.
	Partition FaultKind = "partition"
	// LeaderIsolation cuts the raft leader off from every node.
	LeaderIsolation FaultKind = "leader-isolation"
	// ServerPause stops a server's network and timers for a while.
	ServerPause FaultKind = "server-pause"
	// ServerCrash crashes a server and restarts it from its disk.
	ServerCrash FaultKind = "server-crash"
	// LeaderKill crashes the raft leader and restarts it later.
	LeaderKill FaultKind = "leader-kill"
	// PowerLoss cuts the power of one server, a minority or all of them:
	// each loses what its disk had not fsynced.
	PowerLoss FaultKind = "power-loss"
)

// AllFaults is every kind, the default of Options.Faults; NoFaults is none.
var (
	AllFaults = []FaultKind{ProcessPause, ProcessCrash, ProcessPartition, Partition, LeaderIsolation,
		ServerPause, ServerCrash, LeaderKill, PowerLoss}
	NoFaults = []FaultKind{}
)

// coreKinds maps each public kind to the simulator's: a process fault is the
// recipe driver's holder fault, aimed at a Begin instead of a recipe hold.
var coreKinds = map[FaultKind]core.FaultKind{
	ProcessPause:     core.FaultHolderPause,
	ProcessCrash:     core.FaultHolderCrash,
	ProcessPartition: core.FaultHolderPartition,
	Partition:        core.FaultPartition,
	LeaderIsolation:  core.FaultLeaderIsolation,
	ServerPause:      core.FaultServerPause,
	ServerCrash:      core.FaultCrashRestart,
	LeaderKill:       core.FaultLeaderKill,
	PowerLoss:        core.FaultPowerLoss,
}

func publicKind(k core.FaultKind) FaultKind {
	for p, c := range coreKinds {
		if c == k {
			return p
		}
	}
	return FaultKind(k)
}

// Fault is one fault of a run's schedule. A seed draws the schedule; a
// shrunk run's, or one written by hand, can be given as Options.Schedule.
type Fault struct {
	ID   int           `json:"id"` // its number in the seed's schedule
	Kind FaultKind     `json:"kind"`
	At   time.Duration `json:"at"` // from when the processes started
	Dur  time.Duration `json:"dur"`
	// Pick chooses the target (which process or server, which side of a
	// partition); the same pick always chooses alike.
	Pick uint64 `json:"pick"`
	// Rate, for ProcessPartition, is the rate of the process's clock while
	// it lasts (0: unchanged).
	Rate float64 `json:"rate,omitempty"`
}

func (f Fault) String() string {
	return fmt.Sprintf("#%d %s at %.3fs for %.3fs", f.ID, f.Kind, f.At.Seconds(), f.Dur.Seconds())
}

func (f Fault) core() core.Fault {
	return core.Fault{ID: f.ID, Kind: coreKinds[f.Kind], At: f.At, Dur: f.Dur, Pick: f.Pick, Rate: f.Rate}
}

func publicFault(f core.Fault) Fault {
	return Fault{ID: f.ID, Kind: publicKind(f.Kind), At: f.At, Dur: f.Dur, Pick: f.Pick, Rate: f.Rate}
}

// FormatSchedule is a schedule one fault a line, times in seconds.
func FormatSchedule(s []Fault) string {
	if len(s) == 0 {
		return "no faults"
	}
	lines := make([]string, len(s))
	for i, f := range s {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// faultsFrom and faultsHealedBefore bound a seeded schedule: faults start
// once the processes have had time to begin, and the last one heals this
// long before the run ends, so what it left behind plays out.
const (
	faultsFrom   = 5 * time.Second
	faultsSettle = 10 * time.Second
)

// Schedule is the fault schedule seed draws for a run of the given length
// with the given kinds (nil: AllFaults) and processes: what Options.Schedule
// replaces. The same arguments always give the same schedule.
func Schedule(seed uint64, duration time.Duration, kinds []FaultKind, processes int) ([]Fault, error) {
	if kinds == nil {
		kinds = AllFaults
	}
	var ck []core.FaultKind
	for _, k := range kinds {
		c, ok := coreKinds[k]
		if !ok {
			return nil, fmt.Errorf("sim: unknown fault kind %q (known: %v)", k, AllFaults)
		}
		if !slices.Contains(ck, c) {
			ck = append(ck, c)
		}
	}
	// Keep one process alive: a crash past that is a pause.
	plan := core.HolderCrashCap("harness-faults", processes-1)
	var out []Fault
	for _, f := range core.NewSchedule(seed, plan, ck, faultsFrom, duration-faultsSettle) {
		out = append(out, publicFault(f))
	}
	return out, nil
}

// processFaults carries out the process fault kinds on a run's processes.
type processFaults struct {
	cl    *core.Cluster
	procs []*Process
}

// target picks, by pick, one of the processes inside a Begin now, or
// failing that one still running; nil if every process has crashed.
func (pf processFaults) target(pick uint64) *Process {
	var believing, alive []*Process
	for _, p := range pf.procs {
		if p.isCrashed() {
			continue
		}
		alive = append(alive, p)
		if p.believing() {
			believing = append(believing, p)
		}
	}
	switch {
	case len(believing) > 0:
		return believing[pick%uint64(len(believing))]
	case len(alive) > 0:
		return alive[pick%uint64(len(alive))]
	}
	return nil
}

func (pf processFaults) StartClientFault(in *core.Injector, f core.Fault) (func(), bool) {
	switch f.Kind {
	case core.FaultHolderPause, core.FaultHolderCrash, core.FaultHolderPartition:
	default:
		return nil, false
	}
	p := pf.target(f.Pick)
	if p == nil {
		in.Mark(f, "start", nil, "no running process: ignored")
		return nil, true
	}
	note := "believes nothing"
	if p.believing() {
		note = "inside a Begin"
	}
	switch f.Kind {
	case core.FaultHolderPause:
		resume := in.PauseHost(p.name, p.agent)
		p.freeze()
		in.Mark(f, "start", []string{p.name, p.agent}, note)
		return func() {
			resume()
			p.thaw()
		}, true
	case core.FaultHolderCrash:
		p.crash()
		// Down, not paused: what the process had in flight is lost with it
		// (a held request would be delivered, or wait, forever).
		_ = in.Net.Down(p.name)
		in.Mark(f, "start", []string{p.name, p.agent}, note)
		in.CrashAgent(p.agent)
		return nil, true
	default: // core.FaultHolderPartition
		_ = in.Net.Partition([]string{p.name, p.agent}, slices.Clone(pf.cl.PeersNames()))
		if f.Rate > 0 {
			p.clock.SetRate(f.Rate)
			note += fmt.Sprintf("; clock rate %.2f", f.Rate)
		}
		in.Mark(f, "start", []string{p.name, p.agent}, note)
		return func() {
			in.Net.Heal()
			p.clock.SetRate(0)
		}, true
	}
}
