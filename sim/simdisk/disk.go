// Package simdisk is an in-memory file system (impl/disk.FS) for running a
// server's durable raft storage inside a testing/synctest bubble, where real
// file I/O would stall the virtual clock, and for injecting the faults a
// real disk has:
//
//   - PowerLoss: every write and directory change not yet fsynced is lost
//     (PowerLossRand keeps a random prefix of them, a write possibly torn at
//     a 512-byte sector), every open file and lock is dropped, and the disk
//     refuses everything until PowerOn. CutPower marks the instant the
//     power went, earlier: what the process still writes after it is lost
//     whole, as it never reached the disk.
//   - Crash (kill -9): open files and locks are dropped, and nothing else
//     changes: the page cache outlives the process, so unsynced writes stay
//     readable, and a later power loss can still lose them.
//   - FailSyncs: every fsync fails until cleared.
//   - SetSyncDelay: every fsync takes that long (time.Sleep, on the
//     bubble's clock) on the calling goroutine.
//
// What a process sees is always the latest state, as through the page
// cache; what a power loss leaves is what was fsynced. A file's data is
// durable after an fsync of the file; its name (a create, rename, link or
// removal) after an fsync of its directory. Directories themselves
// (MkdirAll) are durable at once: a simplification, see MkdirAll.
//
// Files are stored sparsely in 4 KiB chunks, and a chunk that was only ever
// written with zeros is not stored, so raft-wal's zero-filled 64 MiB
// segments cost what has been written into them. The writes since a file's
// last fsync keep what they overwrote, to be undone by a power loss.
//
// Not modelled: a failed fsync that silently drops the dirty pages (here
// the writes stay pending and a later successful fsync persists them;
// raftlog never relies on that, it stops at the first failure), reordering
// of one file's unsynced writes (a power loss keeps a prefix), a cross-
// directory rename being atomic across the two directories, disk space,
// permissions and modification times.
package simdisk

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft-wal/types"

	"github.com/tenurekv/tenure/impl/disk"
)

const (
	chunkSize = 4 << 10
	// SectorSize is the unit a torn write keeps whole.
	SectorSize = 512
	// MaxFileSize bounds a file, as raft-wal bounds a segment.
	MaxFileSize = 1<<31 - 1
)

var (
	// ErrPowerOff is every call between PowerLoss and PowerOn.
	ErrPowerOff = errors.New("simdisk: the power is off")
	// ErrStaleHandle is a file opened before a crash or power loss.
	ErrStaleHandle = errors.New("simdisk: file opened before a crash or power loss")

	errNotDir     = errors.New("not a directory")
	errIsDir      = errors.New("is a directory")
	errNotEmpty   = errors.New("directory not empty")
	errBadFlag    = errors.New("unsupported open flag")
	errReadOnly   = errors.New("file not open for writing")
	errTooLarge   = errors.New("file too large")
	errBadOffset  = errors.New("negative offset")
	errWriteOnly  = errors.New("file not open for reading")
	errCrossLinks = errors.New("cannot link a directory")
)

// Disk is an in-memory file system whose unsynced state a power loss
// drops. It is safe for concurrent use; the zero value is not usable, use
// New.
type Disk struct {
	mu     sync.Mutex
	root   *node
	nextID uint64
	// off is set by PowerLoss until PowerOn.
	off bool
	// epoch counts crashes and power losses; a handle from an earlier one
	// is dead.
	epoch uint64
	locks map[string]*lockHandle
	// dirty holds the files with unsynced writes and the directories with
	// unsynced changes.
	dirty map[*node]struct{}

	syncErr error
	// onFailedSync, if set, is told of each fsync FailSyncs fails.
	onFailedSync func(path string)
	// lying: fsyncs succeed and persist nothing (LieOnSync).
	lying bool
	// cut is set from CutPower to the power loss: for each node with
	// unsynced changes at the cut, how many it had; the rest came after.
	cut       map[*node]int
	syncDelay time.Duration
}

var _ disk.FS = (*Disk)(nil)

// New returns an empty disk with a root directory "/".
func New() *Disk {
	d := &Disk{locks: map[string]*lockHandle{}, dirty: map[*node]struct{}{}}
	d.root = d.newDir()
	return d
}

// node is a directory or a regular file.
type node struct {
	id    uint64 // creation order: sorts nodes for a seeded power loss
	isDir bool

	// A directory: its entries as the process sees them, as of its last
	// fsync, and the changes since, in order.
	entries map[string]*node
	synced  map[string]*node
	ops     []dirOp

	// A file: its size and non-zero chunks as the process sees them, and
	// the changes since its last fsync, in order.
	size    int64
	chunks  map[int64]*[chunkSize]byte
	pending []fileOp
}

// dirOp is one change to a directory: name now names n (nil: removed),
// and from, if set, was removed at the same moment (a rename).
type dirOp struct {
	name string
	n    *node
	from string
}

// fileOp is one change to a file's contents, with what it replaced.
type fileOp struct {
	// A write: n bytes at off; data nil means zeros.
	off, n int64
	data   []byte
	// before is what the write overwrote inside the old size; nil means
	// zeros (a region never written).
	before []byte
	// oldSize is the size before this change.
	oldSize int64
	// A resize (not a write) when resize is set: to newSize, with the old
	// chunks kept when it shrank.
	resize    bool
	newSize   int64
	oldChunks map[int64]*[chunkSize]byte
}

func (d *Disk) newDir() *node {
	d.nextID++
	return &node{id: d.nextID, isDir: true, entries: map[string]*node{}, synced: map[string]*node{}}
}

func (d *Disk) newFile() *node {
	d.nextID++
	return &node{id: d.nextID, chunks: map[int64]*[chunkSize]byte{}}
}

// split cleans name into its directory components and its last element.
func split(name string) []string {
	p := path.Clean("/" + strings.ReplaceAll(name, `\`, "/"))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// lookup finds name; the caller holds mu.
func (d *Disk) lookup(op, name string) (*node, error) {
	n := d.root
	for _, c := range split(name) {
		if !n.isDir {
			return nil, &fs.PathError{Op: op, Path: name, Err: errNotDir}
		}
		next, ok := n.entries[c]
		if !ok {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		n = next
	}
	return n, nil
}

// parent finds the directory holding name, and name's last element.
func (d *Disk) parent(op, name string) (*node, string, error) {
	cs := split(name)
	if len(cs) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	dir, err := d.lookup(op, "/"+strings.Join(cs[:len(cs)-1], "/"))
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: errNotDir}
	}
	return dir, cs[len(cs)-1], nil
}

// on reports ErrPowerOff while the power is off; the caller holds mu.
func (d *Disk) on(op, name string) error {
	if d.off {
		return &fs.PathError{Op: op, Path: name, Err: ErrPowerOff}
	}
	return nil
}

// setEntry changes a directory entry, unsynced until the directory's fsync.
func (d *Disk) setEntry(dir *node, name string, n *node, from string) {
	if n == nil {
		delete(dir.entries, name)
	} else {
		dir.entries[name] = n
	}
	if from != "" {
		delete(dir.entries, from)
	}
	dir.ops = append(dir.ops, dirOp{name: name, n: n, from: from})
	d.dirty[dir] = struct{}{}
}

// MkdirAll creates name and its missing parents. Unlike a file's name, a
// new directory is durable at once: tenure creates DataDir/raft and
// DataDir/snapshots once and never fsyncs DataDir, which journaling file
// systems (ext4, XFS) make durable with the next fsync of a file inside
// them. Modelling the strict rule would lose the whole log at a power
// loss soon after a first start.
func (d *Disk) MkdirAll(name string, _ fs.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("mkdir", name); err != nil {
		return err
	}
	n := d.root
	for _, c := range split(name) {
		next, ok := n.entries[c]
		switch {
		case !ok && d.cut != nil:
			// After the cut nothing reaches the disk, not even this.
			next = d.newDir()
			d.setEntry(n, c, next, "")
		case !ok:
			next = d.newDir()
			n.entries[c] = next
			n.synced[c] = next
		case !next.isDir:
			return &fs.PathError{Op: "mkdir", Path: name, Err: errNotDir}
		}
		n = next
	}
	return nil
}

// OpenFile opens name with O_RDONLY, O_WRONLY or O_RDWR, and O_CREATE,
// O_EXCL and O_TRUNC; a directory only read-only (to fsync it).
func (d *Disk) OpenFile(name string, flag int, _ fs.FileMode) (disk.File, error) {
	const known = os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_EXCL | os.O_TRUNC
	if flag&^known != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errBadFlag}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.openLocked(name, flag)
}

func (d *Disk) openLocked(name string, flag int) (*File, error) {
	if err := d.on("open", name); err != nil {
		return nil, err
	}
	dir, base, err := d.parent("open", name)
	if err != nil {
		if len(split(name)) == 0 && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) == 0 {
			return d.handle(d.root, name, flag, nil), nil // the root, to fsync it
		}
		return nil, err
	}
	n, ok := dir.entries[base]
	switch {
	case ok && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		n = d.newFile()
		d.setEntry(dir, base, n, "")
	case n.isDir && flag&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	if !n.isDir && flag&os.O_TRUNC != 0 && n.size > 0 {
		d.resize(n, 0)
	}
	return d.handle(n, name, flag, dir), nil
}

func (d *Disk) handle(n *node, name string, flag int, dir *node) *File {
	return &File{d: d, n: n, name: name, dir: dir, epoch: d.epoch,
		read:  flag&os.O_WRONLY == 0,
		write: flag&(os.O_WRONLY|os.O_RDWR) != 0}
}

// Stat describes name.
func (d *Disk) Stat(name string) (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("stat", name); err != nil {
		return nil, err
	}
	n, err := d.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return info(path.Base(path.Clean("/"+name)), n), nil
}

// Link gives oldname's file the new name newname, which must not exist.
func (d *Disk) Link(oldname, newname string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("link", oldname); err != nil {
		return err
	}
	n, err := d.lookup("link", oldname)
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.Unwrap(err)}
	}
	if n.isDir {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errCrossLinks}
	}
	dir, base, err := d.parent("link", newname)
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.Unwrap(err)}
	}
	if _, ok := dir.entries[base]; ok {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: fs.ErrExist}
	}
	d.setEntry(dir, base, n, "")
	return nil
}

// Rename moves oldname to newname, replacing a file there. Within one
// directory it is one change; across two, one change in each.
func (d *Disk) Rename(oldname, newname string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("rename", oldname); err != nil {
		return err
	}
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	odir, obase, err := d.parent("rename", oldname)
	if err != nil {
		return linkErr(errors.Unwrap(err))
	}
	n, ok := odir.entries[obase]
	if !ok {
		return linkErr(fs.ErrNotExist)
	}
	ndir, nbase, err := d.parent("rename", newname)
	if err != nil {
		return linkErr(errors.Unwrap(err))
	}
	if old, ok := ndir.entries[nbase]; ok {
		if old == n {
			return nil
		}
		if old.isDir || n.isDir {
			return linkErr(errIsDir)
		}
	}
	if odir == ndir {
		d.setEntry(ndir, nbase, n, obase)
		return nil
	}
	d.setEntry(ndir, nbase, n, "")
	d.setEntry(odir, obase, nil, "")
	return nil
}

// Remove removes a file or an empty directory.
func (d *Disk) Remove(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("remove", name); err != nil {
		return err
	}
	dir, base, err := d.parent("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.entries[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.isDir && len(n.entries) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errNotEmpty}
	}
	d.setEntry(dir, base, nil, "")
	return nil
}

// ReadDir lists a directory, sorted by name.
func (d *Disk) ReadDir(name string) ([]fs.DirEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("readdir", name); err != nil {
		return nil, err
	}
	n, err := d.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	out := make([]fs.DirEntry, 0, len(n.entries))
	for _, k := range sortedNames(n.entries) {
		out = append(out, fs.FileInfoToDirEntry(info(k, n.entries[k])))
	}
	return out, nil
}

func sortedNames(m map[string]*node) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ListDir names the regular files in dir, sorted (raft-wal's VFS).
func (d *Disk) ListDir(dir string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.on("open", dir); err != nil {
		return nil, err
	}
	n, err := d.lookup("open", dir)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: errNotDir}
	}
	var names []string
	for _, k := range sortedNames(n.entries) {
		if !n.entries[k].isDir {
			names = append(names, k)
		}
	}
	return names, nil
}

// Create makes a new file of size bytes (zeros) whose first Sync also
// syncs dir, as raft-wal's own file system does.
func (d *Disk) Create(dir, name string, size uint64) (types.WritableFile, error) {
	p := path.Join(dir, name)
	if size > MaxFileSize {
		return nil, &fs.PathError{Op: "create", Path: p, Err: errTooLarge}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.openLocked(p, os.O_CREATE|os.O_EXCL|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		d.resize(f.n, int64(size))
	}
	f.syncsDir = true
	return f, nil
}

// Delete removes dir/name and syncs dir (raft-wal's VFS).
func (d *Disk) Delete(dir, name string) error {
	if err := d.Remove(path.Join(dir, name)); err != nil {
		return err
	}
	f, err := d.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// OpenReader opens dir/name read-only (raft-wal's VFS).
func (d *Disk) OpenReader(dir, name string) (types.ReadableFile, error) {
	return d.OpenFile(path.Join(dir, name), os.O_RDONLY, 0)
}

// OpenWriter opens an existing dir/name to read and write (raft-wal's VFS).
func (d *Disk) OpenWriter(dir, name string) (types.WritableFile, error) {
	return d.OpenFile(path.Join(dir, name), os.O_RDWR, 0)
}

// Lock takes an exclusive lock on name (creating the file) until the
// closer is closed, or the holder crashes or loses power.
func (d *Disk) Lock(name string) (io.Closer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := d.openLocked(name, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	key := path.Clean("/" + name)
	if _, held := d.locks[key]; held {
		return nil, fmt.Errorf("lock %s: %w", name, disk.ErrLocked)
	}
	l := &lockHandle{f: f, key: key}
	d.locks[key] = l
	return l, nil
}

type lockHandle struct {
	f   *File
	key string
}

// Close releases the lock; after a crash or power loss, which released it
// already, it does nothing.
func (l *lockHandle) Close() error {
	d := l.f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.locks[l.key] == l {
		delete(d.locks, l.key)
	}
	l.f.closed = true
	return nil
}

// PowerLoss cuts the power: every unsynced write and directory change is
// lost, open files and locks are dropped, and every call fails with
// ErrPowerOff until PowerOn.
func (d *Disk) PowerLoss() { d.powerLoss(nil) }

// PowerLossRand cuts the power as a real disk might: of each file's
// unsynced writes, a random prefix reached the disk, its last write
// possibly torn at a sector boundary; of each directory's unsynced changes,
// a random prefix. r decides; files and directories are visited in
// creation order, so one seed gives one result. After CutPower, only
// what was unsynced at the cut can be kept.
func (d *Disk) PowerLossRand(r *rand.Rand) { d.powerLoss(r) }

// CutPower is the instant the power goes, for a process that runs on
// until it notices: from here on its fsyncs report success and persist
// nothing, and the next PowerLoss or PowerLossRand drops every write and
// directory change made after the cut, whatever part of the earlier
// unsynced ones it keeps.
//
// Without it, a seeded loss after LieOnSync could keep a write the dying
// process made after its fsync had (it believed) covered an earlier one
// in another file, which a disk without power never does: a commit to
// raft-wal's meta store that records a segment sealed came back while the
// segment's own earlier seal was lost, and raft read the zeros where the
// seal's index should be as an offset of 0 ("corrupt frame header with
// unknown type 13", the first byte of a segment's magic number).
func (d *Disk) CutPower() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut != nil {
		return
	}
	d.cut = make(map[*node]int, len(d.dirty))
	for n := range d.dirty {
		d.cut[n] = len(n.ops) + len(n.pending)
	}
}

func (d *Disk) powerLoss(r *rand.Rand) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.off = true
	d.dropHandles()
	dirty := make([]*node, 0, len(d.dirty))
	for n := range d.dirty {
		dirty = append(dirty, n)
	}
	slices.SortFunc(dirty, func(a, b *node) int { return cmp.Compare(a.id, b.id) })
	for _, n := range dirty {
		// The changes that may have reached the disk: all of them, or
		// those made before the cut.
		limit := len(n.ops) + len(n.pending)
		if d.cut != nil {
			limit = d.cut[n]
		}
		if n.isDir {
			d.revertDir(n, r, limit)
		} else {
			d.revertFile(n, r, limit)
		}
	}
	clear(d.dirty)
	d.cut = nil
}

// PowerOn lets calls through again after a power loss. Call it once the
// server that lost power has stopped, and before restarting it: a
// goroutine of the old server still running would otherwise write to the
// disk the restarted one sees.
func (d *Disk) PowerOn() {
	d.mu.Lock()
	d.off = false
	d.mu.Unlock()
}

// Crash is a kill -9 of the process using the disk: its open files and
// locks are dropped (every later call on an old handle fails with
// ErrStaleHandle) and nothing else changes. Unsynced writes stay, readable
// by the restarted process, as the page cache outlives a process; they
// are durable only once something fsyncs them.
func (d *Disk) Crash() {
	d.mu.Lock()
	d.dropHandles()
	d.mu.Unlock()
}

func (d *Disk) dropHandles() {
	d.epoch++
	clear(d.locks)
}

// FailSyncs makes every fsync (of a file or a directory) fail with err
// from now on, until FailSyncs(nil). A failed fsync leaves the writes it
// was to persist unsynced.
func (d *Disk) FailSyncs(err error) {
	d.mu.Lock()
	d.syncErr = err
	d.mu.Unlock()
}

// OnFailedSync sets f to be told (outside the disk's lock) of every fsync
// that FailSyncs makes fail, with the file's path; nil stops telling.
func (d *Disk) OnFailedSync(f func(path string)) {
	d.mu.Lock()
	d.onFailedSync = f
	d.mu.Unlock()
}

// LieOnSync makes every fsync report success and persist nothing, until
// LieOnSync(false): a disk whose write cache ignores flushes. (For the
// instant between the power going and the process noticing, use
// CutPower, which also keeps what the process writes then from being
// kept by PowerLossRand.)
func (d *Disk) LieOnSync(lie bool) {
	d.mu.Lock()
	d.lying = lie
	d.mu.Unlock()
}

// SetSyncDelay makes every fsync sleep for delay (time.Sleep: virtual time
// in a synctest bubble) on the calling goroutine before it takes effect;
// a power loss during the sleep loses what it was to persist.
//
// Inside a bubble, a goroutine waiting on a sync.Mutex is not durably
// blocked, so if the fsync's caller holds a mutex that another goroutine
// waits for, the bubble's clock stops for good. raft-wal holds its write
// lock across the fsync of an append and of a rotation's metadata, and
// its rotation, a compaction (raft's snapshot goroutine) and Close take it
// too: a delay is safe only while none of those can overlap a write, e.g.
// with segments large enough not to rotate and no snapshot under way.
// raftlog's own locks held across fsyncs are channels, which do not stop
// the clock.
func (d *Disk) SetSyncDelay(delay time.Duration) {
	d.mu.Lock()
	d.syncDelay = max(delay, 0)
	d.mu.Unlock()
}

// Usage is the memory the disk holds for file data: stored chunks plus
// the copies kept to undo unsynced writes. Directory entries are not
// counted.
func (d *Disk) Usage() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[*node]bool{}
	var total int64
	var walk func(n *node)
	count := func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.isDir {
			walk(n)
			return
		}
		total += int64(len(n.chunks)) * chunkSize
		for _, op := range n.pending {
			total += int64(len(op.data) + len(op.before) + len(op.oldChunks)*chunkSize)
		}
	}
	walk = func(dir *node) {
		for _, c := range dir.entries {
			count(c)
		}
		for _, c := range dir.synced {
			count(c)
		}
	}
	walk(d.root)
	return total
}

// Unsynced counts the writes and directory changes a power loss would
// lose now.
func (d *Disk) Unsynced() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := 0
	for n := range d.dirty {
		total += len(n.ops) + len(n.pending)
	}
	return total
}

func info(name string, n *node) fs.FileInfo {
	return fileInfo{name: name, size: n.size, dir: n.isDir}
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o750
	}
	return 0o640
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
