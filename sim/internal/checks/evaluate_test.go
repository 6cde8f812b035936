package checks

import (
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"
)

// TestScheduleViewIsReadable: schedule.json shows durations, not
// nanoseconds.
func TestScheduleViewIsReadable(t *testing.T) {
	v := scheduleView([]core.Fault{{ID: 1, Kind: core.FaultDiskStall, At: 6860835638, Dur: 15 * time.Second, Param: 853388026}})
	if len(v) != 1 || v[0].At != "6.861s" || v[0].Dur != "15s" || v[0].Param != "853ms" {
		t.Fatalf("schedule view %+v", v)
	}
}
