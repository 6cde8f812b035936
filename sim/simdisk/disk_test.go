package simdisk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/disk"
)

// faultDisk is what the checks below drive: a Disk, or a deliberately
// broken one that each check must catch.
type faultDisk interface {
	disk.FS
	PowerLoss()
	PowerOn()
	Crash()
	FailSyncs(error)
}

// check is a property of the disk; it returns what it found wrong.
type check struct {
	name string
	fn   func(d faultDisk) error
}

var checks = []check{
	{"power loss drops unsynced data", checkPowerLossDropsData},
	{"power loss drops unsynced names", checkPowerLossDropsNames},
	{"crash keeps unsynced writes", checkCrashKeeps},
	{"failed fsyncs are sticky and persist nothing", checkFailedSyncs},
}

func TestChecksPassOnDisk(t *testing.T) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.fn(New()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestChecksFailOnBrokenDisks shows every check catching the disk it is
// written against: a check that passes here checks nothing.
func TestChecksFailOnBrokenDisks(t *testing.T) {
	for _, tc := range []struct {
		check string
		bad   faultDisk
	}{
		{"power loss drops unsynced data", keepsDataDisk{New()}},
		{"power loss drops unsynced names", keepsNamesDisk{New()}},
		{"crash keeps unsynced writes", crashLosesDisk{New()}},
		{"failed fsyncs are sticky and persist nothing", syncsSucceedDisk{New()}},
		{"failed fsyncs are sticky and persist nothing", oneFailedSyncDisk{New()}},
	} {
		t.Run(fmt.Sprintf("%s/%T", tc.check, tc.bad), func(t *testing.T) {
			for _, c := range checks {
				if c.name != tc.check {
					continue
				}
				if err := c.fn(tc.bad); err == nil {
					t.Fatalf("%T passed %q", tc.bad, c.name)
				} else {
					t.Logf("caught: %v", err)
				}
				return
			}
			t.Fatalf("no check %q", tc.check)
		})
	}
}

// keepsDataDisk syncs every file before it loses power.
type keepsDataDisk struct{ *Disk }

func (k keepsDataDisk) PowerLoss() {
	walk(k.Disk, "/", func(p string, isDir bool) {
		if !isDir {
			_ = syncPath(k.Disk, p)
		}
	})
	k.Disk.PowerLoss()
}

// keepsNamesDisk syncs every directory before it loses power.
type keepsNamesDisk struct{ *Disk }

func (k keepsNamesDisk) PowerLoss() {
	walk(k.Disk, "/", func(p string, isDir bool) {
		if isDir {
			_ = syncPath(k.Disk, p)
		}
	})
	k.Disk.PowerLoss()
}

// crashLosesDisk loses power when the process crashes.
type crashLosesDisk struct{ *Disk }

func (c crashLosesDisk) Crash() { c.Disk.PowerLoss(); c.Disk.PowerOn() }

// syncsSucceedDisk ignores FailSyncs.
type syncsSucceedDisk struct{ *Disk }

func (syncsSucceedDisk) FailSyncs(error) {}

// oneFailedSyncDisk fails only the first fsync after FailSyncs.
type oneFailedSyncDisk struct{ *Disk }

func (o oneFailedSyncDisk) OpenFile(name string, flag int, perm fs.FileMode) (disk.File, error) {
	f, err := o.Disk.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &clearingFile{File: f, d: o.Disk}, nil
}

// clearingFile clears the disk's sync failure once it has seen one.
type clearingFile struct {
	disk.File
	d *Disk
}

func (c *clearingFile) Sync() error {
	err := c.File.Sync()
	if err != nil {
		c.d.FailSyncs(nil)
	}
	return err
}

func walk(d *Disk, dir string, fn func(p string, isDir bool)) {
	fn(dir, true)
	entries, err := d.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if e.IsDir() {
			walk(d, p, fn)
		} else {
			fn(p, false)
		}
	}
}

func syncPath(d disk.FS, p string) error {
	f, err := d.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// writeFile writes data at off of name, creating it, and fsyncs the file
// if sync.
func writeFile(d disk.FS, name string, off int64, data []byte, sync bool) error {
	f, err := d.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, off); err != nil {
		return errors.Join(err, f.Close())
	}
	if sync {
		if err := f.Sync(); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return f.Close()
}

func readFile(d disk.FS, name string) ([]byte, error) {
	fi, err := d.Stat(name)
	if err != nil {
		return nil, err
	}
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		return b, nil
	}
	return nil, fmt.Errorf("read %s: %d of %d bytes: %w", name, n, len(b), err)
}

// reboot loses power and turns it back on.
func reboot(d faultDisk) {
	d.PowerLoss()
	d.PowerOn()
}

func checkPowerLossDropsData(d faultDisk) error {
	if err := d.MkdirAll("/a", 0o750); err != nil {
		return err
	}
	synced := bytes.Repeat([]byte("s"), 6000)
	if err := writeFile(d, "/a/f", 0, synced, true); err != nil {
		return err
	}
	if err := syncPath(d, "/a"); err != nil {
		return err
	}
	// Overwrite across a chunk boundary, and grow the file.
	if err := writeFile(d, "/a/f", 4000, bytes.Repeat([]byte("u"), 5000), false); err != nil {
		return err
	}
	if got, err := readFile(d, "/a/f"); err != nil || len(got) != 9000 {
		return fmt.Errorf("before the power loss: %d bytes, %v", len(got), err)
	}
	reboot(d)
	got, err := readFile(d, "/a/f")
	if err != nil {
		return err
	}
	if !bytes.Equal(got, synced) {
		return fmt.Errorf("after the power loss the file has %d bytes (%q...), want the %d synced", len(got), got[min(len(got), 3990):min(len(got), 4010)], len(synced))
	}
	return nil
}

func checkPowerLossDropsNames(d faultDisk) error {
	if err := d.MkdirAll("/a", 0o750); err != nil {
		return err
	}
	for _, n := range []string{"/a/kept", "/a/removed", "/a/renamed"} {
		if err := writeFile(d, n, 0, []byte(n), true); err != nil {
			return err
		}
	}
	if err := syncPath(d, "/a"); err != nil {
		return err
	}
	// Synced data under a name that never was.
	if err := writeFile(d, "/a/new", 0, []byte("new"), true); err != nil {
		return err
	}
	if err := d.Remove("/a/removed"); err != nil {
		return err
	}
	if err := d.Rename("/a/renamed", "/a/moved"); err != nil {
		return err
	}
	if err := d.Link("/a/kept", "/a/linked"); err != nil {
		return err
	}
	reboot(d)
	names, err := d.ListDir("/a")
	if err != nil {
		return err
	}
	if want := []string{"kept", "removed", "renamed"}; fmt.Sprint(names) != fmt.Sprint(want) {
		return fmt.Errorf("after the power loss /a holds %v, want %v", names, want)
	}
	for _, n := range []string{"/a/kept", "/a/removed", "/a/renamed"} {
		if got, err := readFile(d, n); err != nil || string(got) != n {
			return fmt.Errorf("%s after the power loss: %q, %v", n, got, err)
		}
	}
	return nil
}

func checkCrashKeeps(d faultDisk) error {
	if err := d.MkdirAll("/a", 0o750); err != nil {
		return err
	}
	f, err := d.OpenFile("/a/f", os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte("unsynced"), 0); err != nil {
		return err
	}
	d.Crash()
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, ErrStaleHandle) && !errors.Is(err, ErrPowerOff) {
		return fmt.Errorf("a handle from before the crash wrote: %v", err)
	}
	got, err := readFile(d, "/a/f")
	if err != nil || string(got) != "unsynced" {
		return fmt.Errorf("after the crash: %q, %v", got, err)
	}
	return nil
}

func checkFailedSyncs(d faultDisk) error {
	if err := d.MkdirAll("/a", 0o750); err != nil {
		return err
	}
	if err := writeFile(d, "/a/f", 0, []byte("synced"), true); err != nil {
		return err
	}
	if err := syncPath(d, "/a"); err != nil {
		return err
	}
	broken := errors.New("EIO")
	d.FailSyncs(broken)
	f, err := d.OpenFile("/a/f", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("UNSYNC"), 0); err != nil {
		return err
	}
	for i := range 3 {
		if err := f.Sync(); !errors.Is(err, broken) {
			return fmt.Errorf("fsync %d after FailSyncs: %v", i, err)
		}
	}
	if err := syncPath(d, "/a"); !errors.Is(err, broken) {
		return fmt.Errorf("directory fsync after FailSyncs: %v", err)
	}
	reboot(d)
	if got, err := readFile(d, "/a/f"); err != nil || string(got) != "synced" {
		return fmt.Errorf("a write whose fsyncs failed survived a power loss: %q, %v", got, err)
	}
	d.FailSyncs(nil)
	if err := writeFile(d, "/a/f", 0, []byte("later!"), true); err != nil {
		return fmt.Errorf("fsync after FailSyncs(nil): %w", err)
	}
	return nil
}

func TestPowerLossKeepsSyncedAndRefusesUntilPowerOn(t *testing.T) {
	d := New()
	if err := d.MkdirAll("/data/raft", 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFile("/data/raft/x", os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	d.PowerLoss()
	if _, err := f.WriteAt([]byte("z"), 0); !errors.Is(err, ErrPowerOff) {
		t.Fatalf("write with the power off: %v", err)
	}
	if _, err := d.OpenFile("/data/raft/y", os.O_CREATE|os.O_RDWR, 0o640); !errors.Is(err, ErrPowerOff) {
		t.Fatalf("create with the power off: %v", err)
	}
	d.PowerOn()
	if _, err := f.WriteAt([]byte("z"), 0); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("write through a handle from before the power loss: %v", err)
	}
	// The file's data was synced, its name never was; the directory made
	// by MkdirAll stays.
	if _, err := d.Stat("/data/raft/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a name never synced survived: %v", err)
	}
	if fi, err := d.Stat("/data/raft"); err != nil || !fi.IsDir() {
		t.Fatalf("MkdirAll's directory: %v %v", fi, err)
	}
}

// TestPowerLossRand checks the seeded power loss: a file of appended
// records keeps its synced part and then a prefix of the later appends,
// cut at a record boundary or a sector boundary, and one seed always gives
// the same file.
func TestPowerLossRand(t *testing.T) {
	const record = 700
	run := func(seed uint64) (synced, unsynced []byte, got []byte) {
		d := New()
		if err := d.MkdirAll("/d", 0o750); err != nil {
			t.Fatal(err)
		}
		f, err := d.OpenFile("/d/log", os.O_CREATE|os.O_RDWR, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		for i := range 20 {
			rec := bytes.Repeat([]byte{byte('a' + i)}, record)
			if _, err := f.WriteAt(rec, int64(i*record)); err != nil {
				t.Fatal(err)
			}
			all = append(all, rec...)
			if i == 4 {
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := syncPath(d, "/d"); err != nil {
					t.Fatal(err)
				}
			}
		}
		d.PowerLossRand(rand.New(rand.NewPCG(seed, 1)))
		d.PowerOn()
		got, err = readFile(d, "/d/log")
		if err != nil {
			t.Fatal(err)
		}
		return all[:5*record], all, got
	}
	cuts := map[int]bool{}
	for seed := range uint64(200) {
		synced, all, got := run(seed)
		if _, _, again := run(seed); !bytes.Equal(got, again) {
			t.Fatalf("seed %d: two runs left different files", seed)
		}
		if len(got) < len(synced) || !bytes.Equal(got, all[:len(got)]) {
			t.Fatalf("seed %d: %d bytes left, not the synced %d and a prefix of the rest", seed, len(got), len(synced))
		}
		if len(got)%record != 0 && len(got)%SectorSize != 0 {
			t.Fatalf("seed %d: cut at %d, neither a write nor a sector boundary", seed, len(got))
		}
		cuts[len(got)] = true
	}
	if len(cuts) < 10 {
		t.Fatalf("200 seeds left only %d different lengths", len(cuts))
	}
}

// TestPowerLossRandDirectories: of a directory's unsynced changes, a
// prefix survives; a rename is never half done.
func TestPowerLossRandDirectories(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(100) {
		d := New()
		if err := d.MkdirAll("/d", 0o750); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(d, "/d/a.tmp", 0, []byte("a"), true); err != nil {
			t.Fatal(err)
		}
		if err := d.Rename("/d/a.tmp", "/d/a"); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(d, "/d/b", 0, []byte("b"), true); err != nil {
			t.Fatal(err)
		}
		d.PowerLossRand(rand.New(rand.NewPCG(seed, 2)))
		d.PowerOn()
		names, err := d.ListDir("/d")
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(names)
		switch got {
		case "[]", "[a.tmp]", "[a]", "[a b]":
		default:
			t.Fatalf("seed %d: %s is no prefix of the changes", seed, got)
		}
		seen[got] = true
	}
	if len(seen) != 4 {
		t.Fatalf("100 seeds left only %v", seen)
	}
}

// TestZeroFilledSegmentIsCheap: a 64 MiB file of zeros, as raft-wal's
// segments are, costs what is written into it.
func TestZeroFilledSegmentIsCheap(t *testing.T) {
	d := New()
	if err := d.MkdirAll("/d", 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFile("/d/seg", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < 64<<20; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte("x"), 10000), 1000); err != nil {
		t.Fatal(err)
	}
	if u := d.Usage(); u > 64<<10 {
		t.Fatalf("a zero-filled 64 MiB file with 10 kB written uses %d bytes", u)
	}
	fi, err := d.Stat("/d/seg")
	if err != nil || fi.Size() != 64<<20 {
		t.Fatalf("size %v, %v", fi, err)
	}
	// The end reads back as zeros.
	buf := make([]byte, 100)
	if n, err := f.ReadAt(buf, 64<<20-50); n != 50 || err != io.EOF || !allZero(buf[:50]) {
		t.Fatalf("read at the end: %d %v", n, err)
	}
}

// TestTruncateThenPowerLoss: an unsynced O_TRUNC is undone with the file's
// old contents.
func TestTruncateThenPowerLoss(t *testing.T) {
	d := New()
	want := bytes.Repeat([]byte("0123456789"), 1000)
	if err := writeFile(d, "/f", 0, want, true); err != nil {
		t.Fatal(err)
	}
	if err := syncPath(d, "/"); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFile("/f", os.O_TRUNC|os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("short"), 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := readFile(d, "/f"); string(got) != "short" {
		t.Fatalf("after truncate and write: %q", got)
	}
	reboot(d)
	if got, err := readFile(d, "/f"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after the power loss: %d bytes, %v", len(got), err)
	}
}

func TestLock(t *testing.T) {
	d := New()
	l, err := d.Lock("/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock("/LOCK"); !errors.Is(err, disk.ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	d.Crash()
	l2, err := d.Lock("/LOCK")
	if err != nil {
		t.Fatalf("lock after the holder crashed: %v", err)
	}
	// The crashed holder's Close does not release the new holder's lock.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock("/LOCK"); !errors.Is(err, disk.ErrLocked) {
		t.Fatalf("lock after a stale close: %v", err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock("/LOCK"); err != nil {
		t.Fatalf("lock after release: %v", err)
	}
}

// TestSyncDelay: an fsync takes the delay on the bubble's clock, and a
// power loss during it loses what it was to persist.
func TestSyncDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New()
		d.SetSyncDelay(30 * time.Millisecond)
		f, err := d.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 30*time.Millisecond {
			t.Fatalf("fsync took %v", took)
		}
		if _, err := f.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := syncPath(d, "/"); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- f.Sync() }()
		time.Sleep(10 * time.Millisecond)
		d.PowerLoss()
		if err := <-errc; !errors.Is(err, ErrPowerOff) {
			t.Fatalf("fsync cut by the power loss: %v", err)
		}
		d.PowerOn()
		if fi, err := d.Stat("/f"); err != nil || fi.Size() != 0 {
			t.Fatalf("after the power loss: %v %v", fi, err)
		}
	})
}

// TestRawVFS covers raft-wal's half of the interface: Create preallocates
// and syncs its directory at the first Sync; Delete syncs it too.
func TestRawVFS(t *testing.T) {
	d := New()
	if err := d.MkdirAll("/w", 0o750); err != nil {
		t.Fatal(err)
	}
	w, err := d.Create("/w", "1.wal", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create("/w", "1.wal", 1<<20); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over an existing name: %v", err)
	}
	if _, err := w.WriteAt([]byte("entry"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete("/w", "absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("delete of an absent file: %v", err)
	}
	reboot(d)
	names, err := d.ListDir("/w")
	if err != nil || fmt.Sprint(names) != "[1.wal]" {
		t.Fatalf("after the power loss: %v %v", names, err)
	}
	r, err := d.OpenReader("/w", "1.wal")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != "entry" {
		t.Fatalf("read back %q %v", buf, err)
	}
	if err := d.Delete("/w", "1.wal"); err != nil {
		t.Fatal(err)
	}
	reboot(d)
	if names, err := d.ListDir("/w"); err != nil || len(names) != 0 {
		t.Fatalf("after a synced delete: %v %v", names, err)
	}
}

// TestLieOnSync: while the disk lies, an fsync succeeds and persists
// nothing, names included, so a power loss takes it all; once it stops
// lying, an fsync persists again.
func TestLieOnSync(t *testing.T) {
	d := New()
	if err := d.MkdirAll("/data", 0o750); err != nil {
		t.Fatal(err)
	}
	d.LieOnSync(true)
	if err := writeFile(d, "/data/lied", 0, []byte("lost"), true); err != nil {
		t.Fatalf("a lying fsync failed: %v", err)
	}
	if err := syncPath(d, "/data"); err != nil {
		t.Fatal(err)
	}
	d.LieOnSync(false)
	if err := writeFile(d, "/data/kept", 0, []byte("kept"), true); err != nil {
		t.Fatal(err)
	}
	if err := syncPath(d, "/data"); err != nil {
		t.Fatal(err)
	}
	d.PowerLoss()
	d.PowerOn()
	if b, err := readFile(d, "/data/kept"); err != nil || string(b) != "kept" {
		t.Fatalf("what an honest fsync persisted: %q %v", b, err)
	}
	if b, err := readFile(d, "/data/lied"); err == nil && string(b) == "lost" {
		t.Fatal("what a lying fsync covered survived a power loss")
	}
}

// TestCutPower: of what a process writes after the power was cut, a
// seeded power loss keeps nothing, though its fsyncs succeed; of what was
// unsynced at the cut it keeps a prefix, as without a cut.
func TestCutPower(t *testing.T) {
	const record = 700
	rec := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, record) }
	keptPre, keptLog := false, false
	for seed := range uint64(200) {
		d := New()
		if err := d.MkdirAll("/d", 0o750); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"/d/log", "/d/other"} {
			if err := writeFile(d, name, 0, rec(0), true); err != nil {
				t.Fatal(err)
			}
		}
		if err := syncPath(d, "/d"); err != nil {
			t.Fatal(err)
		}
		// Unsynced at the cut: two appends and a new name.
		for i := 1; i <= 2; i++ {
			if err := writeFile(d, "/d/log", int64(i*record), rec(i), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeFile(d, "/d/pre", 0, rec(9), true); err != nil {
			t.Fatal(err)
		}
		d.CutPower()
		// The dying process writes on, and its fsyncs report success.
		if err := writeFile(d, "/d/log", 3*record, rec(3), true); err != nil {
			t.Fatalf("an fsync after the cut failed: %v", err)
		}
		if err := writeFile(d, "/d/other", record, rec(4), true); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(d, "/d/post", 0, rec(5), true); err != nil {
			t.Fatal(err)
		}
		if err := d.Rename("/d/pre", "/d/moved"); err != nil {
			t.Fatal(err)
		}
		if err := d.MkdirAll("/d/sub", 0o750); err != nil {
			t.Fatal(err)
		}
		if err := syncPath(d, "/d"); err != nil {
			t.Fatal(err)
		}
		d.PowerLossRand(rand.New(rand.NewPCG(seed, 3)))
		d.PowerOn()

		got, err := readFile(d, "/d/log")
		if err != nil {
			t.Fatal(err)
		}
		all := slices.Concat(rec(0), rec(1), rec(2))
		if len(got) < record || len(got) > len(all) || !bytes.Equal(got, all[:len(got)]) {
			t.Fatalf("seed %d: the log has %d bytes, not its synced record and a prefix of the two unsynced at the cut", seed, len(got))
		}
		keptLog = keptLog || len(got) > record
		if b, err := readFile(d, "/d/other"); err != nil || !bytes.Equal(b, rec(0)) {
			t.Fatalf("seed %d: a file clean at the cut kept a write made after it: %d bytes, %v", seed, len(b), err)
		}
		names, err := d.ReadDir("/d")
		if err != nil {
			t.Fatal(err)
		}
		var ls []string
		for _, e := range names {
			ls = append(ls, e.Name())
		}
		switch fmt.Sprint(ls) {
		case "[log other]":
		case "[log other pre]":
			keptPre = true
		default:
			t.Fatalf("seed %d: the directory holds %v: a change made after the cut survived", seed, ls)
		}
	}
	if !keptLog || !keptPre {
		t.Fatalf("200 seeds never kept an unsynced write (%v) or name (%v) from before the cut", keptLog, keptPre)
	}
}

// TestOnFailedSync: the hook hears of each fsync FailSyncs fails, and of no
// other.
func TestOnFailedSync(t *testing.T) {
	d := New()
	if err := d.MkdirAll("/data", 0o750); err != nil {
		t.Fatal(err)
	}
	var told []string
	d.OnFailedSync(func(path string) { told = append(told, path) })
	if err := writeFile(d, "/data/ok", 0, []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	d.FailSyncs(errors.New("EIO"))
	if err := writeFile(d, "/data/bad", 0, []byte("x"), true); err == nil {
		t.Fatal("an fsync FailSyncs should fail succeeded")
	}
	if len(told) != 1 || told[0] != "/data/bad" {
		t.Fatalf("told of %q, want the one failed fsync of /data/bad", told)
	}
}
