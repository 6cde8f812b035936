package tla

import (
	"encoding/json"
	"fmt"
	"os"
)

// expected is one entry of expected.json: what TLC reported for a config.
type expected struct {
	Config         string `json:"config"`
	Result         string `json:"result"` // "ok" or "violation"
	Invariant      string `json:"invariant,omitempty"`
	ExitCode       int    `json:"exit_code"`
	DistinctStates int    `json:"distinct_states"`
	// TraceStates is the length of TLC's counterexample, initial state included.
	TraceStates int    `json:"trace_states,omitempty"`
	Trace       string `json:"trace,omitempty"` // path of TLC's JSON counterexample, relative to tla/
	// MeasuredBy says where DistinctStates comes from: "tlc" (or empty, for
	// older entries) when TLC produced it, "explorer" when only the Go
	// explorer has measured the current spec. For a violation, the
	// explorer's figure is the count at the end of the violation's BFS level,
	// an upper bound for TLC's count at its stop.
	MeasuredBy string `json:"measured_by,omitempty"`
}

// readExpected reads and checks expected.json.
func readExpected(path string) ([]expected, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load expected results: %w", err)
	}
	var doc struct {
		Configs []expected `json:"configs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("load expected results %s: %w", path, err)
	}
	if len(doc.Configs) == 0 {
		return nil, fmt.Errorf("load expected results %s: no configs", path)
	}
	for _, e := range doc.Configs {
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("load expected results %s: %s: %w", path, e.Config, err)
		}
	}
	return doc.Configs, nil
}

func (e expected) validate() error {
	switch {
	case e.Config == "":
		return fmt.Errorf("no config named")
	case e.DistinctStates <= 0:
		return fmt.Errorf("distinct_states must be positive")
	case e.Result == "ok" && (e.ExitCode != 0 || e.Invariant != "" || e.Trace != ""):
		return fmt.Errorf(`result "ok" needs exit code 0 and no invariant or trace`)
	case e.Result == "violation" && (e.ExitCode != 12 || e.Invariant == "" || e.Trace == "" || e.TraceStates < 1):
		return fmt.Errorf(`result "violation" needs exit code 12, an invariant, a trace and its length`)
	case e.Result != "ok" && e.Result != "violation":
		return fmt.Errorf("unknown result %q", e.Result)
	case e.MeasuredBy != "" && e.MeasuredBy != "tlc" && e.MeasuredBy != "explorer":
		return fmt.Errorf("unknown measured_by %q", e.MeasuredBy)
	}
	return nil
}
