package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// finishRotation completes a segment rotation that raft-wal began and never
// committed, before raft-wal opens dir.
//
// raft-wal seals its tail segment inside the append that fills it (an index
// block and a commit frame, synced with the entries) and moves to a new
// segment afterwards, in the background, by committing the seal to its meta
// store. A process that stops in between, by a crash or by a Close that
// races the rotation, leaves a tail whose file is sealed while the meta store
// still lists it as the open tail. raft-wal (v0.4.2 and its main branch) then
// recovers the tail as sealed and refuses every later append with
// ErrSealed: the server could never store a log entry again, as a follower
// or as a leader. TestLogSyncPowerLoss found it; TestFinishRotation keeps it.
//
// The seal is committed here as raft-wal's own rotation would: the tail gets
// its seal time, last index and index block, and an empty tail follows it,
// whose file raft-wal creates when it opens. The seal is trusted only if
// every entry reads back through it as through the recovered tail.
func finishRotation(dir string, meta types.MetaStore, vfs types.VFS) error {
	state, err := meta.Load(dir)
	if err != nil {
		return fmt.Errorf("load raft log metadata: %w", err)
	}
	n := len(state.Segments)
	if n == 0 || !state.Segments[n-1].SealTime.IsZero() {
		return nil
	}
	tail := state.Segments[n-1]
	filer := segment.NewFiler(dir, vfs)
	w, err := filer.RecoverTail(tail)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a tail whose file was never created: raft-wal creates it
	}
	if err != nil {
		return fmt.Errorf("recover raft log tail segment %d: %w", tail.ID, err)
	}
	defer w.Close()
	sealed, indexStart, err := w.Sealed()
	if err != nil || !sealed {
		return err
	}
	last := w.LastIndex()
	if last < tail.BaseIndex {
		return fmt.Errorf("raft log tail segment %d is sealed with no entries", tail.ID)
	}
	now := time.Now()
	tail.SealTime, tail.MaxIndex, tail.IndexStart = now, last, indexStart
	if err := sealReadsBack(filer, tail, w); err != nil {
		return fmt.Errorf("raft log tail segment %d was sealed but its rotation never committed, and the seal does not read back: %w", tail.ID, err)
	}
	base := last + 1
	next := types.SegmentInfo{
		ID:         state.NextSegmentID,
		BaseIndex:  base,
		MinIndex:   base,
		SizeLimit:  tail.SizeLimit,
		Codec:      tail.Codec,
		CreateTime: now,
	}
	state.NextSegmentID++
	state.Segments[n-1] = tail
	state.Segments = append(state.Segments, next)
	if err := meta.CommitState(state); err != nil {
		return fmt.Errorf("commit the interrupted rotation of raft log segment %d: %w", tail.ID, err)
	}
	return nil
}

// sealReadsBack checks that sealed, read through its index block, holds
// the same entries as the recovered tail.
func sealReadsBack(filer *segment.Filer, sealed types.SegmentInfo, tail types.SegmentWriter) error {
	r, err := filer.Open(sealed)
	if err != nil {
		return err
	}
	defer r.Close()
	for i := sealed.MinIndex; i <= sealed.MaxIndex; i++ {
		want, err := tail.GetLog(i)
		if err != nil {
			return fmt.Errorf("entry %d from the tail: %w", i, err)
		}
		got, err := r.GetLog(i)
		if err != nil {
			want.Close()
			return fmt.Errorf("entry %d through the seal: %w", i, err)
		}
		same := bytes.Equal(got.Bs, want.Bs)
		got.Close()
		want.Close()
		if !same {
			return fmt.Errorf("entry %d differs through the seal", i)
		}
	}
	return nil
}
