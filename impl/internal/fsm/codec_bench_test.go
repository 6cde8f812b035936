package fsm

import (
	"testing"

	"github.com/tenurekv/tenure/model"
)

// BenchmarkCommandCodec times the hot command of a lock cycle, a KV acquire,
// through the log-entry codec: the leader encodes it once and every server
// decodes it once.
func BenchmarkCommandCodec(b *testing.B) {
	c := newWireCodec()
	cmd := model.Command{KV: &model.KVOp{
		Verb: model.KVLock, Key: "bench/lock/17", Session: "5f2b5d4e-8c1a-4f0e-9d3b-1a2b3c4d5e6f",
		Value: []byte("holder-17"), LockDelaySeen: 123456,
	}}
	data, err := c.encodeCommand(cmd)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.encodeCommand(cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.decodeCommand(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
