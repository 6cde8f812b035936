package conformance

import (
	"strconv"
	"strings"
	"testing"
)

// The S64 case (a tenure case, so outside the contract-profile mutants) is
// caught by a server whose acquire names the wrong holding period, and by
// one that names none.
func TestAcquireNamesCaseCatchesWrongSequencer(t *testing.T) {
	t.Parallel()
	// rewrite changes the answers to KV PUTs: acquires when acquires is
	// set, every other write otherwise.
	rewrite := func(name string, acquires bool, change func(x *exchange)) mutant {
		return mutant{name: name, handle: func(_ *mstate, x *exchange) (bool, error) {
			if !isKVPut(x) || x.q.Has("acquire") != acquires {
				return false, nil
			}
			err := x.forward()
			if err == nil {
				change(x)
			}
			return true, err
		}}
	}
	nameOne := func(x *exchange) {
		x.header.Set("X-Tenure-Lock-Index", "1")
		x.header.Set("X-Tenure-Modify-Index", "1")
	}
	requireTenureMutantsCaught(t, `^S64/`,
		rewrite("lock-index-one-behind", true, func(x *exchange) {
			if n, err := strconv.ParseUint(x.header.Get("X-Tenure-Lock-Index"), 10, 64); err == nil {
				x.header.Set("X-Tenure-Lock-Index", strconv.FormatUint(n-1, 10))
			}
		}),
		rewrite("modify-index-one-behind", true, func(x *exchange) {
			if n, err := strconv.ParseUint(x.header.Get("X-Tenure-Modify-Index"), 10, 64); err == nil {
				x.header.Set("X-Tenure-Modify-Index", strconv.FormatUint(n-1, 10))
			}
		}),
		rewrite("sequencer-not-named", true, func(x *exchange) {
			x.header.Del("X-Tenure-Lock-Index")
			x.header.Del("X-Tenure-Modify-Index")
		}),
		rewrite("refusal-names-a-sequencer", true, func(x *exchange) {
			if strings.TrimSpace(string(x.out)) == "false" {
				nameOne(x)
			}
		}),
		rewrite("other-writes-name-a-sequencer", false, nameOne),
	)
}
