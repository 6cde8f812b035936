package conformance

import (
	"net/http"
	"testing"
)

// The request-limits case (a tenure case, so outside the contract-profile
// mutants) is caught by a server that takes over-long keys: here a proxy
// that answers such a PUT with success instead of 413.
func TestRequestLimitsCaseCatchesLimitlessServer(t *testing.T) {
	t.Parallel()
	requireTenureMutantsCaught(t, `^S39/request-limits`, mutant{name: "key-limit-ignored", handle: func(_ *mstate, x *exchange) (bool, error) {
		if !isKVPut(x) || len(kvKey(x)) <= 8<<10 {
			return false, nil
		}
		x.code, x.header, x.out = http.StatusOK, http.Header{}, []byte("true")
		return true, nil
	}})
}
