package raftlog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
)

// fileMeta is raft-wal's meta store (the segment list, and the stable
// store's term and vote) as one file, for a disk other than the real one,
// where raft-wal's BoltDB store cannot run (it maps its file).
//
// Every commit writes the whole state to a temporary file, fsyncs it,
// renames it over the old one and fsyncs the directory, so a power loss at
// any point leaves the old state or the new one, never a mix; a checksum
// refuses a file that is neither. The state is small: one record per
// segment plus a few stable keys.
type fileMeta struct {
	fs disk.FS

	// lock guards the rest and is held across a commit's fsyncs: a
	// one-slot channel, as LogSync.flushing is, so that a goroutine waiting
	// for it inside a synctest bubble is durably blocked.
	lock   chan struct{}
	dir    string // set by the first Load
	state  types.PersistentState
	stable []stableKV // sorted by key
	closed bool
}

// metaFileName is not BoltDB's wal-meta.db, so neither store ever reads
// the other's file.
const metaFileName = "wal-meta.json"

// maxMetaFile bounds what Load reads: far above any real state (a segment
// record is about 200 bytes).
const maxMetaFile = 16 << 20

var metaCRC = crc32.MakeTable(crc32.Castagnoli)

type stableKV struct{ K, V []byte }

// metaFile is the file's JSON, after a 4-byte CRC-32C of it.
type metaFile struct {
	State  types.PersistentState
	Stable []stableKV
}

var errMetaClosed = errors.New("raft log meta store is closed")

func (m *fileMeta) Load(dir string) (types.PersistentState, error) {
	defer m.acquire()()
	if m.closed {
		return types.PersistentState{}, errMetaClosed
	}
	if m.dir != "" && m.dir != dir {
		return types.PersistentState{}, fmt.Errorf("raft log meta store: load %s, already open in %s", dir, m.dir)
	}
	// A commit cut short leaves its temporary file; it never counts.
	if err := m.fs.Remove(filepath.Join(dir, metaFileName+".tmp")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return types.PersistentState{}, fmt.Errorf("raft log meta store: remove an unfinished commit: %w", err)
	}
	mf, err := readMetaFile(m.fs, filepath.Join(dir, metaFileName))
	if err != nil {
		return types.PersistentState{}, err
	}
	m.dir, m.state, m.stable = dir, mf.State, mf.Stable
	return cloneState(m.state), nil
}

// readMetaFile reads a committed state; a missing file is the empty state.
func readMetaFile(d disk.FS, path string) (metaFile, error) {
	var mf metaFile
	fi, err := d.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return mf, nil
	}
	if err != nil {
		return mf, fmt.Errorf("raft log meta store: %w", err)
	}
	if fi.Size() < 4 || fi.Size() > maxMetaFile {
		return mf, fmt.Errorf("raft log meta store: %s has %d bytes: %w", path, fi.Size(), types.ErrCorrupt)
	}
	f, err := d.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return mf, fmt.Errorf("raft log meta store: %w", err)
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if cerr := f.Close(); err == nil || (errors.Is(err, io.EOF) && n == len(buf)) {
		err = cerr
	}
	if err != nil {
		return mf, fmt.Errorf("raft log meta store: read %s: %w", path, err)
	}
	body := buf[4:]
	if crc32.Checksum(body, metaCRC) != binary.BigEndian.Uint32(buf) {
		return mf, fmt.Errorf("raft log meta store: %s fails its checksum: %w", path, types.ErrCorrupt)
	}
	if err := json.Unmarshal(body, &mf); err != nil {
		return mf, fmt.Errorf("raft log meta store: parse %s: %w: %w", path, err, types.ErrCorrupt)
	}
	if !slices.IsSortedFunc(mf.Stable, func(a, b stableKV) int { return bytes.Compare(a.K, b.K) }) {
		return mf, fmt.Errorf("raft log meta store: %s has unsorted stable keys: %w", path, types.ErrCorrupt)
	}
	return mf, nil
}

func (m *fileMeta) CommitState(st types.PersistentState) error {
	defer m.acquire()()
	st = cloneState(st)
	if err := m.commitLocked(st, m.stable); err != nil {
		return err
	}
	m.state = st
	return nil
}

func (m *fileMeta) GetStable(key []byte) ([]byte, error) {
	defer m.acquire()()
	if m.closed {
		return nil, errMetaClosed
	}
	if i, ok := m.find(key); ok {
		return bytes.Clone(m.stable[i].V), nil
	}
	return nil, nil
}

// SetStable stores value under key; a nil value deletes the key, as in
// raft-wal's BoltDB store.
func (m *fileMeta) SetStable(key, value []byte) error {
	defer m.acquire()()
	stable := slices.Clone(m.stable)
	i, ok := m.find(key)
	switch {
	case value == nil && ok:
		stable = slices.Delete(stable, i, i+1)
	case value == nil:
		return nil
	case ok:
		stable[i].V = bytes.Clone(value)
	default:
		stable = slices.Insert(stable, i, stableKV{K: bytes.Clone(key), V: bytes.Clone(value)})
	}
	if err := m.commitLocked(m.state, stable); err != nil {
		return err
	}
	m.stable = stable
	return nil
}

func (m *fileMeta) find(key []byte) (int, bool) {
	return slices.BinarySearchFunc(m.stable, key, func(kv stableKV, k []byte) int { return bytes.Compare(kv.K, k) })
}

// commitLocked replaces the file with st and stable, durably.
func (m *fileMeta) commitLocked(st types.PersistentState, stable []stableKV) error {
	if m.closed {
		return errMetaClosed
	}
	if m.dir == "" {
		return errors.New("raft log meta store: commit before Load")
	}
	body, err := json.Marshal(metaFile{State: st, Stable: stable})
	if err != nil {
		return fmt.Errorf("raft log meta store: encode: %w", err)
	}
	if 4+len(body) > maxMetaFile {
		return fmt.Errorf("raft log meta store: state of %d bytes is over the bound of %d", 4+len(body), maxMetaFile)
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), crc32.Checksum(body, metaCRC))
	buf = append(buf, body...)
	path := filepath.Join(m.dir, metaFileName)
	tmp := path + ".tmp"
	f, err := m.fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o640)
	if err != nil {
		return fmt.Errorf("raft log meta store: %w", err)
	}
	_, err = f.WriteAt(buf, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = m.fs.Rename(tmp, path)
	}
	if err == nil {
		err = syncPath(m.fs, m.dir)
	}
	if err != nil {
		return fmt.Errorf("raft log meta store: commit %s: %w", path, err)
	}
	return nil
}

// Close makes every later call fail; a second Close does nothing.
func (m *fileMeta) Close() error {
	defer m.acquire()()
	m.closed = true
	return nil
}

// acquire takes the lock and returns its release.
func (m *fileMeta) acquire() func() {
	m.lock <- struct{}{}
	return func() { <-m.lock }
}

// cloneState copies st, so that neither raft-wal nor this store sees the
// other change its segment list.
func cloneState(st types.PersistentState) types.PersistentState {
	st.Segments = slices.Clone(st.Segments)
	return st
}
