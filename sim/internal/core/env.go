package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tenurekv/tenure/model"
)

// Startup timing shared by every driver, in virtual time.
const (
	startupLimit  = 30 * time.Second // the cluster must elect and register by then
	WorkloadDelay = 2 * time.Second  // after registration, before clients start
)

// PlanServerClocks names the servers n1…nN and draws their clocks: exact
// without skew, otherwise off by up to ±5 s and drifting up to ±5 %. It
// returns the slowest rate, which stretches every bound.
func PlanServerClocks(hdr *RunHeader, servers int, skew bool, r *rand.Rand) (minRate float64) {
	minRate = 1.0
	for i := range servers {
		name := fmt.Sprintf("n%d", i+1)
		hdr.Servers = append(hdr.Servers, name)
		ck := ClockSkew{Rate: 1}
		if skew {
			ck = ClockSkew{Offset: Between(r, -5*time.Second, 5*time.Second), Rate: math.Round((0.95+0.1*r.Float64())*1e6) / 1e6}
		}
		minRate = min(minRate, ck.Rate)
		hdr.Clocks[name] = ck
	}
	return minRate
}

// WaitRegistered waits until a leader exists and every server registered.
func WaitRegistered(cl *Cluster) error {
	deadline := time.After(startupLimit)
	for _, s := range cl.Servers {
		select {
		case <-s.Current().Registered():
		case <-deadline:
			return fmt.Errorf("sim: cluster not registered within %v", startupLimit)
		}
	}
	return nil
}

// KvJSON is Consul's KV entry on the wire.
type KvJSON struct {
	Key         string
	Value       []byte
	Flags       uint64
	LockIndex   uint64
	Session     string
	CreateIndex uint64
	ModifyIndex uint64
}

// Entry is the model's form of the entry.
func (k KvJSON) Entry() model.KVEntry {
	return model.KVEntry{Key: k.Key, Value: k.Value, Flags: k.Flags, LockIndex: k.LockIndex,
		Session: k.Session, CreateIndex: k.CreateIndex, ModifyIndex: k.ModifyIndex}
}
