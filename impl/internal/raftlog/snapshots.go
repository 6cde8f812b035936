package raftlog

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/disk"
)

// snapshotStore keeps raft snapshots on a disk other than the real one,
// where raft's FileSnapshotStore cannot run (it calls package os). It keeps
// the same promise: a snapshot is listed only once it is whole and durable.
//
// A snapshot is one file, DATA then its metadata (JSON, with the data's
// CRC-32C) then a trailer of the metadata's length and CRC-32C. It is
// written under a temporary name, fsynced, renamed into place and the
// directory fsynced, so a power loss leaves it either whole or absent. The
// newest `retain` are kept, ordered as FileSnapshotStore orders them (term,
// then index, then ID).
type snapshotStore struct {
	fs     disk.FS
	dir    string
	retain int
	seq    atomic.Uint64
}

const (
	snapSuffix = ".snap"
	snapTmp    = ".tmp"
	// maxSnapMeta bounds a snapshot's metadata (mostly the configuration,
	// well under a kilobyte a server).
	maxSnapMeta     = 16 << 20
	snapTrailerSize = 8
	snapWriteBuffer = 64 << 10
)

var errSnapCorrupt = errors.New("snapshot is corrupt")

// snapFileMeta is what a snapshot file records besides its data.
type snapFileMeta struct {
	raft.SnapshotMeta
	CRC uint32 // of the data
}

// newSnapshotStore opens the store in base/snapshots, where raft's file
// store keeps its own, and removes what a crash left half written.
func newSnapshotStore(d disk.FS, base string, retain int) (*snapshotStore, error) {
	if retain < 1 {
		return nil, fmt.Errorf("snapshot retain count %d must be at least 1", retain)
	}
	dir := filepath.Join(base, "snapshots")
	if err := d.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create snapshot directory: %w", err)
	}
	entries, err := d.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshot directory: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), snapTmp) {
			if err := d.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove an unfinished snapshot: %w", err)
			}
		}
	}
	return &snapshotStore{fs: d, dir: dir, retain: retain}, nil
}

func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	// Version 0 carries the configuration in the legacy Peers encoding,
	// which needs the transport; tenure's raft writes version 1.
	if version < 1 || version > raft.SnapshotVersionMax {
		return nil, fmt.Errorf("unsupported snapshot version %d", version)
	}
	// The sequence number keeps two snapshots in the same millisecond (a
	// virtual clock stands still) apart.
	id := fmt.Sprintf("%d-%d-%d-%d", term, index, time.Now().UnixMilli(), s.seq.Add(1))
	tmp := filepath.Join(s.dir, id+snapSuffix+snapTmp)
	f, err := s.fs.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("create snapshot %s: %w", id, err)
	}
	sink := &snapshotSink{store: s, f: f, tmp: tmp, meta: snapFileMeta{SnapshotMeta: raft.SnapshotMeta{
		Version: version, ID: id, Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex,
	}}}
	sink.buf = bufio.NewWriterSize(&sink.at, snapWriteBuffer)
	sink.at.sink = sink
	return sink, nil
}

// List gives the newest snapshots, at most retain, newest first. A file
// that does not read back is left out, as FileSnapshotStore leaves out a
// snapshot it cannot read.
func (s *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	metas, err := s.all()
	if err != nil {
		return nil, err
	}
	out := make([]*raft.SnapshotMeta, 0, min(len(metas), s.retain))
	for _, m := range metas[:min(len(metas), s.retain)] {
		out = append(out, &m.SnapshotMeta)
	}
	return out, nil
}

// all reads every whole snapshot, newest first.
func (s *snapshotStore) all() ([]*snapFileMeta, error) {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var metas []*snapFileMeta
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), snapSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		m, f, err := s.readMeta(id)
		if err != nil {
			continue
		}
		f.Close()
		metas = append(metas, m)
	}
	slices.SortFunc(metas, func(a, b *snapFileMeta) int {
		return cmp.Or(cmp.Compare(b.Term, a.Term), cmp.Compare(b.Index, a.Index), strings.Compare(b.ID, a.ID))
	})
	return metas, nil
}

// readMeta opens snapshot id and reads its metadata.
func (s *snapshotStore) readMeta(id string) (*snapFileMeta, disk.File, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return nil, nil, fmt.Errorf("snapshot id %q: %w", id, errSnapCorrupt)
	}
	path := filepath.Join(s.dir, id+snapSuffix)
	fi, err := s.fs.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open snapshot %s: %w", id, err)
	}
	m, err := readSnapMeta(f, fi.Size())
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("snapshot %s: %w", id, err), f.Close())
	}
	if m.ID != id {
		return nil, nil, errors.Join(fmt.Errorf("snapshot %s records id %q: %w", id, m.ID, errSnapCorrupt), f.Close())
	}
	return m, f, nil
}

func readSnapMeta(f io.ReaderAt, size int64) (*snapFileMeta, error) {
	if size < snapTrailerSize {
		return nil, errSnapCorrupt
	}
	var tr [snapTrailerSize]byte
	if err := readFull(f, tr[:], size-snapTrailerSize); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(tr[:4]))
	if n > maxSnapMeta || n > size-snapTrailerSize {
		return nil, errSnapCorrupt
	}
	raw := make([]byte, n)
	if err := readFull(f, raw, size-snapTrailerSize-n); err != nil {
		return nil, err
	}
	if crc32.Checksum(raw, metaCRC) != binary.BigEndian.Uint32(tr[4:]) {
		return nil, errSnapCorrupt
	}
	m := new(snapFileMeta)
	if err := json.Unmarshal(raw, m); err != nil {
		return nil, fmt.Errorf("%w: %w", errSnapCorrupt, err)
	}
	if m.Size != size-snapTrailerSize-n {
		return nil, errSnapCorrupt
	}
	return m, nil
}

// readFull fills p from off; a file that ends first is corrupt.
func readFull(f io.ReaderAt, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errSnapCorrupt
	}
	return err
}

// Open gives snapshot id's data, which fails its read at the end if it
// does not match the checksum taken when it was written.
func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m, f, err := s.readMeta(id)
	if err != nil {
		return nil, nil, err
	}
	return &m.SnapshotMeta, &snapReader{r: io.NewSectionReader(f, 0, m.Size), f: f, want: m.CRC}, nil
}

type snapReader struct {
	r    io.Reader
	f    disk.File
	crc  uint32
	want uint32
}

func (r *snapReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.crc = crc32.Update(r.crc, metaCRC, p[:n])
	if errors.Is(err, io.EOF) && r.crc != r.want {
		return n, fmt.Errorf("snapshot data fails its checksum: %w", errSnapCorrupt)
	}
	return n, err
}

func (r *snapReader) Close() error { return r.f.Close() }

// reap removes all but the newest retain snapshots.
func (s *snapshotStore) reap() error {
	metas, err := s.all()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range metas[min(len(metas), s.retain):] {
		errs = append(errs, s.fs.Remove(filepath.Join(s.dir, m.ID+snapSuffix)))
	}
	return errors.Join(errs...)
}

// snapshotSink writes one snapshot.
type snapshotSink struct {
	store *snapshotStore
	f     disk.File
	tmp   string
	meta  snapFileMeta
	at    offsetWriter
	buf   *bufio.Writer
	done  bool
}

// offsetWriter appends to the sink's file and checksums what it wrote.
type offsetWriter struct {
	sink *snapshotSink
	off  int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.sink.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

func (s *snapshotSink) ID() string { return s.meta.ID }

func (s *snapshotSink) Write(p []byte) (int, error) {
	if s.done {
		return 0, errors.New("write to a closed snapshot")
	}
	n, err := s.buf.Write(p)
	s.meta.CRC = crc32.Update(s.meta.CRC, metaCRC, p[:n])
	return n, err
}

// Close makes the snapshot durable and visible, then reaps old ones. A
// second Close does nothing, as with FileSnapshotStore: an FSM's Persist
// closes the sink and raft closes it again.
func (s *snapshotSink) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	err := s.buf.Flush()
	if err == nil {
		err = s.finish()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write snapshot %s: %w", s.meta.ID, err), s.store.fs.Remove(s.tmp))
	}
	final := filepath.Join(s.store.dir, s.meta.ID+snapSuffix)
	if err := s.store.fs.Rename(s.tmp, final); err != nil {
		return errors.Join(fmt.Errorf("commit snapshot %s: %w", s.meta.ID, err), s.store.fs.Remove(s.tmp))
	}
	if err := syncPath(s.store.fs, s.store.dir); err != nil {
		return fmt.Errorf("commit snapshot %s: fsync its directory: %w", s.meta.ID, err)
	}
	if err := s.store.reap(); err != nil {
		return fmt.Errorf("remove old snapshots: %w", err)
	}
	return nil
}

// finish appends the metadata and trailer and fsyncs the file.
func (s *snapshotSink) finish() error {
	s.meta.Size = s.at.off
	raw, err := json.Marshal(&s.meta)
	if err != nil {
		return err
	}
	if len(raw) > maxSnapMeta {
		return fmt.Errorf("snapshot metadata of %d bytes is over the bound of %d", len(raw), maxSnapMeta)
	}
	sum := crc32.Checksum(raw, metaCRC)
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(raw)))
	raw = binary.BigEndian.AppendUint32(raw, sum)
	if _, err := s.f.WriteAt(raw, s.at.off); err != nil {
		return err
	}
	return s.f.Sync()
}

// Cancel drops the snapshot.
func (s *snapshotSink) Cancel() error {
	if s.done {
		return nil
	}
	s.done = true
	return errors.Join(s.f.Close(), s.store.fs.Remove(s.tmp))
}
