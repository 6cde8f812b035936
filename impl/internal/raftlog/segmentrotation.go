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
		// The sealing append was torn by a power loss: its commit's
		// checksum failed, so raft-wal's recovery went back to the last
		// whole commit, but it still reports the tail sealed (the index
		// frame it saw on the way) and would refuse every append. Nothing
		// after that commit was durable (the append had not returned), so
		// the torn frames are zeroed and raft-wal recovers the tail open.
		// Found by the torn power-loss test.
		if zerr := zeroTornSeal(vfs, dir, tail, indexStart); zerr != nil {
			return fmt.Errorf("raft log tail segment %d: its seal does not read back (%w) and could not be cleared: %w", tail.ID, err, zerr)
		}
		return nil
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

// walFrameHeaderLen is the length of a raft-wal frame header (its
// segment.frameHeaderLen, unexported): an index frame's entries start this
// far after the frame.
const walFrameHeaderLen = 8

// zeroTornSeal zeroes the tail's file from its torn index frame to the end,
// and syncs it: raft-wal reads zeros as the end of the written data.
func zeroTornSeal(vfs types.VFS, dir string, tail types.SegmentInfo, indexStart uint64) error {
	if indexStart < walFrameHeaderLen {
		return fmt.Errorf("index start %d is inside the file header", indexStart)
	}
	f, err := vfs.OpenWriter(dir, segment.FileName(tail))
	if err != nil {
		return err
	}
	from := int64(indexStart - walFrameHeaderLen)
	// What the torn append wrote past the index frame's header: the index
	// (4 bytes an entry, and every entry frame before it takes at least 8,
	// so at most half of indexStart) and the commit frame. A tail's last
	// append may end past its size limit, so that is not the bound.
	end := max(int64(tail.SizeLimit), int64(indexStart+indexStart/2+4*walFrameHeaderLen))
	buf := make([]byte, 64<<10)
	for off := from; off < end; off += int64(len(buf)) {
		n := min(int64(len(buf)), end-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(f.Sync(), f.Close())
}
