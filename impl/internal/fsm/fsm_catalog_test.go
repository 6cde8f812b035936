package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// TestFSMCatalogChangedOnlyForTheCatalog: KV and session writes close
// Changed but not CatalogChanged, which self-registration waits on; a
// catalog write, in a batch with other writes or alone, and a snapshot
// restore close both.
func TestFSMCatalogChangedOnlyForTheCatalog(t *testing.T) {
	codec := newWireCodec()
	f := newFSM(codec, guardEffects{leader.NewLockDelays(clocktest.NewManual(time.Unix(0, 0))), nil})
	index := uint64(0)
	entry := func(c model.Command) *raft.Log {
		index++
		return commandLog(t, codec, index, c)
	}
	register := func(status model.Health) *raft.Log {
		return entry(model.Command{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{
			{CheckID: model.SerfHealthCheckID, Status: status}}}})
	}
	set := func(key string) *raft.Log {
		return entry(model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: key, Value: []byte("v")}})
	}
	session := entry(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "n1",
		Checks: []string{model.SerfHealthCheckID}}})

	f.ApplyBatch([]*raft.Log{register(model.HealthPassing)})
	changed, catalog := f.Changed(), f.CatalogChanged()
	f.ApplyBatch([]*raft.Log{session, set("a"), set("b")})
	if !closed(changed) || closed(catalog) {
		t.Fatalf("KV and session writes: Changed closed %v (want true), CatalogChanged closed %v (want false)", closed(changed), closed(catalog))
	}
	changed, catalog = f.Changed(), f.CatalogChanged()
	f.ApplyBatch([]*raft.Log{set("c"), register(model.HealthCritical), set("d")})
	if !closed(changed) || !closed(catalog) {
		t.Fatalf("a batch with a check change: Changed closed %v, CatalogChanged closed %v, want both", closed(changed), closed(catalog))
	}
	catalog = f.CatalogChanged()
	f.Apply(register(model.HealthPassing))
	if !closed(catalog) {
		t.Fatal("a check change alone did not close CatalogChanged")
	}
	for _, reg := range []model.Register{
		{Node: "n2", Address: "10.0.0.2"},                                       // a node alone
		{Node: "n1", Services: []model.ServiceSpec{{Service: "web", Port: 80}}}, // a service alone
	} {
		before := f.state.Tables()
		catalog = f.CatalogChanged()
		f.Apply(entry(model.Command{Register: &reg}))
		if !closed(catalog) {
			t.Fatalf("registering %+v (tables %+v -> %+v) did not close CatalogChanged", reg, before, f.state.Tables())
		}
	}
	data := snapshotBytes(t, f)
	catalog = f.CatalogChanged()
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !closed(catalog) {
		t.Fatal("a snapshot restore did not close CatalogChanged")
	}
}
