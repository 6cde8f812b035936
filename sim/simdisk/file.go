package simdisk

import (
	"bytes"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"time"

	"github.com/tenurekv/tenure/impl/disk"
)

// File is an open file or directory of a Disk.
type File struct {
	d    *Disk
	n    *node
	name string
	// dir holds the file (nil for the root); a file made by Create syncs it
	// at its first Sync.
	dir      *node
	syncsDir bool
	epoch    uint64
	read     bool
	write    bool
	closed   bool
}

var _ disk.File = (*File)(nil)

// check refuses a closed or stale handle and a disk without power; the
// caller holds mu.
func (f *File) check(op string) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	case f.d.off:
		return &fs.PathError{Op: op, Path: f.name, Err: ErrPowerOff}
	case f.epoch != f.d.epoch:
		return &fs.PathError{Op: op, Path: f.name, Err: ErrStaleHandle}
	}
	return nil
}

// ReadAt reads as os.File does: io.EOF with fewer bytes past the end.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	switch {
	case f.n.isDir:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: errIsDir}
	case !f.read:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: errWriteOnly}
	case off < 0:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: errBadOffset}
	}
	if off >= f.n.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.n.size-off))
	f.n.readAt(p[:n], off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt writes p at off, growing the file if need be; the write is
// unsynced until the next Sync.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check("write"); err != nil {
		return 0, err
	}
	switch {
	case f.n.isDir:
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errIsDir}
	case !f.write:
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errReadOnly}
	case off < 0:
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errBadOffset}
	case off > MaxFileSize-int64(len(p)):
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errTooLarge}
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.d.write(f.n, p, off)
	return len(p), nil
}

// Sync is fsync: the file's writes (or a directory's changes) become
// durable, unless FailSyncs says otherwise.
func (f *File) Sync() error {
	d := f.d
	d.mu.Lock()
	err := f.check("sync")
	delay := d.syncDelay
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	d.mu.Lock()
	// The power may have gone, or the process crashed, during the delay.
	if err := f.check("sync"); err != nil {
		d.mu.Unlock()
		return err
	}
	if d.syncErr != nil {
		err, told := d.syncErr, d.onFailedSync
		d.mu.Unlock()
		if told != nil {
			told(f.name)
		}
		return &fs.PathError{Op: "fsync", Path: f.name, Err: err}
	}
	defer d.mu.Unlock()
	if d.lying || d.cut != nil {
		return nil
	}
	if f.n.isDir {
		d.syncDir(f.n)
		return nil
	}
	f.n.pending = nil
	delete(d.dirty, f.n)
	if f.syncsDir && f.dir != nil {
		d.syncDir(f.dir)
		f.syncsDir = false
	}
	return nil
}

// Datasync is Sync: this disk keeps no metadata apart from the data.
func (f *File) Datasync() error { return f.Sync() }

// Close closes the handle; a second Close fails, as with os.File.
func (f *File) Close() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

// Name is the name the file was opened by.
func (f *File) Name() string { return f.name }

func (d *Disk) syncDir(n *node) {
	n.synced = maps.Clone(n.entries)
	n.ops = nil
	delete(d.dirty, n)
}

// revertDir undoes a directory's unsynced changes, keeping a random
// prefix of the first limit of them if r is set.
func (d *Disk) revertDir(n *node, r *rand.Rand, limit int) {
	ops := n.ops
	n.entries = maps.Clone(n.synced)
	n.ops = nil
	if r == nil {
		return
	}
	for _, op := range ops[:r.IntN(limit+1)] {
		if op.n == nil {
			delete(n.entries, op.name)
		} else {
			n.entries[op.name] = op.n
		}
		if op.from != "" {
			delete(n.entries, op.from)
		}
	}
	n.synced = maps.Clone(n.entries)
}

// revertFile undoes a file's unsynced writes, keeping a random prefix of
// the first limit of them if r is set, the last possibly torn at a sector
// boundary.
func (d *Disk) revertFile(n *node, r *rand.Rand, limit int) {
	ops := n.pending
	for i := len(ops) - 1; i >= 0; i-- {
		n.undo(ops[i])
	}
	n.pending = nil
	if r == nil {
		return
	}
	keep := r.IntN(limit + 1)
	for _, op := range ops[:keep] {
		n.redo(op, op.n)
	}
	if keep < limit && !ops[keep].resize && r.IntN(2) == 0 {
		op := ops[keep]
		// Sector boundaries strictly inside the write.
		first := (op.off/SectorSize + 1) * SectorSize
		if last := op.off + op.n - 1; first <= last {
			sectors := (last-first)/SectorSize + 1
			end := first + r.Int64N(sectors)*SectorSize
			n.redo(op, end-op.off)
		}
	}
	n.pending = nil
}

// write applies a write and records it as unsynced.
func (d *Disk) write(n *node, p []byte, off int64) {
	op := fileOp{off: off, n: int64(len(p)), oldSize: n.size}
	if !allZero(p) {
		op.data = bytes.Clone(p)
	}
	if inside := min(off+int64(len(p)), n.size) - off; inside > 0 && n.stored(off, inside) {
		op.before = make([]byte, inside)
		n.readAt(op.before, off)
	}
	n.pending = append(n.pending, op)
	d.dirty[n] = struct{}{}
	n.put(p, off)
	n.size = max(n.size, off+int64(len(p)))
}

// resize sets a file's size, as an unsynced change.
func (d *Disk) resize(n *node, size int64) {
	op := fileOp{resize: true, oldSize: n.size, newSize: size}
	if size < n.size {
		// The old chunks go to the record whole, to be put back by a power
		// loss; the file keeps copies of what it still holds, as writes
		// change chunks in place.
		op.oldChunks = n.chunks
		n.chunks = make(map[int64]*[chunkSize]byte)
		for c, ch := range op.oldChunks {
			if c*chunkSize < size {
				cp := *ch
				n.chunks[c] = &cp
			}
		}
	}
	n.pending = append(n.pending, op)
	d.dirty[n] = struct{}{}
	n.setSize(size)
}

// undo reverses op, the latest change still applied.
func (n *node) undo(op fileOp) {
	if op.resize {
		if op.oldChunks != nil {
			n.chunks, n.size = op.oldChunks, op.oldSize
		} else {
			n.setSize(op.oldSize)
		}
		return
	}
	if op.before != nil {
		n.put(op.before, op.off)
	} else if inside := min(op.off+op.n, op.oldSize) - op.off; inside > 0 {
		n.zero(op.off, inside)
	}
	n.setSize(op.oldSize)
}

// redo applies op again, only its first k bytes if a write.
func (n *node) redo(op fileOp, k int64) {
	if op.resize {
		n.setSize(op.newSize)
		return
	}
	if op.data != nil {
		n.put(op.data[:k], op.off)
	} else {
		n.zero(op.off, k)
	}
	n.size = max(n.size, op.off+k)
}

// setSize truncates or extends; what lies past a new end is gone, so a
// later extension reads zeros there.
func (n *node) setSize(size int64) {
	if size < n.size {
		for c := range n.chunks {
			if c*chunkSize >= size {
				delete(n.chunks, c)
			}
		}
		if rem := size % chunkSize; rem != 0 {
			if ch := n.chunks[size/chunkSize]; ch != nil {
				clear(ch[rem:])
			}
		}
	}
	n.size = size
}

// readAt copies from the chunks; a missing chunk reads as zeros.
func (n *node) readAt(p []byte, off int64) {
	for len(p) > 0 {
		c, in := off/chunkSize, off%chunkSize
		k := min(int64(len(p)), chunkSize-in)
		if ch := n.chunks[c]; ch != nil {
			copy(p[:k], ch[in:in+k])
		} else {
			clear(p[:k])
		}
		p, off = p[k:], off+k
	}
}

// put writes p into the chunks, storing no chunk that would only hold
// zeros.
func (n *node) put(p []byte, off int64) {
	for len(p) > 0 {
		c, in := off/chunkSize, off%chunkSize
		k := min(int64(len(p)), chunkSize-in)
		ch := n.chunks[c]
		if ch == nil && !allZero(p[:k]) {
			ch = new([chunkSize]byte)
			n.chunks[c] = ch
		}
		if ch != nil {
			copy(ch[in:in+k], p[:k])
		}
		p, off = p[k:], off+k
	}
}

// zero writes k zeros at off.
func (n *node) zero(off, k int64) {
	for k > 0 {
		c, in := off/chunkSize, off%chunkSize
		m := min(k, chunkSize-in)
		if ch := n.chunks[c]; ch != nil {
			if in == 0 && m == chunkSize {
				delete(n.chunks, c)
			} else {
				clear(ch[in : in+m])
			}
		}
		k, off = k-m, off+m
	}
}

// stored reports whether any chunk holds data in [off, off+k).
func (n *node) stored(off, k int64) bool {
	for c := off / chunkSize; c <= (off+k-1)/chunkSize; c++ {
		if n.chunks[c] != nil {
			return true
		}
	}
	return false
}

var zeros [chunkSize]byte

func allZero(p []byte) bool {
	for len(p) > 0 {
		k := min(len(p), chunkSize)
		if !bytes.Equal(p[:k], zeros[:k]) {
			return false
		}
		p = p[k:]
	}
	return true
}
