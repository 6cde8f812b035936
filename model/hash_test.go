package model_test

import (
	"fmt"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestHashIgnoresMapOrder: Hash walks maps in sorted order, so one state
// hashes alike on every call although Go varies map order each time. The
// checks share IDs across nodes, so sorting them by ID alone would not do.
func TestHashIgnoresMapOrder(t *testing.T) {
	s := model.New()
	for i := range 6 {
		reg := model.Register{Node: fmt.Sprintf("n%d", i), Address: "10.0.0.1"}
		for _, id := range []string{"a", "b", "c"} {
			reg.Checks = append(reg.Checks, model.CheckSpec{CheckID: id, Name: id, Status: model.HealthPassing})
		}
		if res := s.Apply(uint64(i+1), model.Command{Register: &reg}); res.Failed() {
			t.Fatal(res.Err)
		}
	}
	want := s.Hash()
	for range 100 {
		if got := s.Hash(); got != want {
			t.Fatalf("hash %x, then %x, of one state", want, got)
		}
	}
}
