package sim

import (
	"os"
	"runtime/debug"
)

// A simulated run allocates quickly and keeps a small heap (under 100 MB
// for 5 servers with their client agents), so with Go's default GOGC of
// 100 the collector's marking took about 8% of a run's CPU; at 200 it
// takes under 4%, for about 30 MB more. It is the simulator process's
// setting, not the agent's. An explicit GOGC in the environment wins.
func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
}
