package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/impl/internal/checks"
)

// The agent keeps what was registered through its API in its data
// directory, laid out as Consul's agent lays it out: one file per service
// under services/, one per check under checks/, and the last status a TTL
// check was given under checks/state/, each named by the SHA-256 of the
// ID. The contents are tenure's own JSON.
const (
	servicesDir   = "services"
	checksDir     = "checks"
	checkStateDir = "checks/state"
	// tmpSuffix marks a file being written; one left by a crash is
	// removed at the next start.
	tmpSuffix = ".tmp"
	// maxPersistedFile bounds what a start reads from one file: a bigger
	// one cannot have been written by the agent and is reported as corrupt.
	maxPersistedFile = 4 << 20
)

// Where a registration came from, as stored: the script-check policy
// decides again by it when the registration is restored.
const (
	sourceRemote = "remote" // the HTTP API
	sourceLocal  = "local"  // the agent itself (maintenance checks)
)

// persistedService is a service file. Token is the one the service keeps
// (State.ServiceToken), as Consul's file keeps it; a file written before
// tenure kept tokens has none and loads as a service without one.
type persistedService struct {
	Token   string `json:",omitempty"`
	Service Service
	Source  string
}

// persistedCheck is a check file. Definition is what the runner runs;
// a maintenance check has none and is restored from Check alone. Token is
// as for persistedService.
type persistedCheck struct {
	Check      Check
	Definition *checks.Definition `json:",omitempty"`
	Token      string             `json:",omitempty"`
	Source     string
}

// persistedCheckState is a TTL check's last status, kept until its TTL
// would have run out (Expires), as Consul keeps it.
type persistedCheckState struct {
	CheckID string
	Status  string
	Output  string
	Expires time.Time
}

// store reads and writes the agent's files on one disk. Every write is
// atomic and durable: a temporary file, fsynced, renamed over the old one,
// and the directory fsynced, so a crash at any point leaves the previous
// file or the new one, whole.
type store struct {
	fs  disk.FS
	dir string
	// lock holds one token while files change. A channel, not a
	// sync.Mutex: a write waits on fsync, and a goroutine parked on a
	// Mutex does not count as blocked for testing/synctest (the
	// simulator's disk sleeps in fsync on virtual time).
	lock chan struct{}
	// ready lists the directories made (and their parents synced) by this
	// process; touched only while holding lock.
	ready map[string]bool
}

func newStore(d disk.FS, dir string) *store {
	if d == nil {
		d = disk.OS{}
	}
	return &store{fs: d, dir: filepath.Clean(dir), lock: make(chan struct{}, 1), ready: map[string]bool{}}
}

// fileName is the file an ID is kept in: a hash, so any ID makes a safe
// and bounded name.
func fileName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func (s *store) path(sub, id string) string { return filepath.Join(s.dir, sub, fileName(id)) }

// change runs f holding the lock; f's edits are undone, as far as they
// can be, when it fails.
func (s *store) change(f func(e *edit) error) error {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	e := &edit{s: s}
	if err := f(e); err != nil {
		if rerr := e.rollback(); rerr != nil {
			return fmt.Errorf("%w (and undoing it: %v)", err, rerr)
		}
		return err
	}
	return nil
}

// edit is one change to the files: it remembers what each file held
// before, so a change that fails half-way can put them back.
type edit struct {
	s    *store
	undo []undoStep
}

type undoStep struct {
	path string
	old  []byte // nil: the file did not exist
}

func (e *edit) put(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	old, err := e.s.read(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	e.undo = append(e.undo, undoStep{path: path, old: old})
	return e.s.writeAtomic(path, data)
}

func (e *edit) remove(path string) error {
	old, err := e.s.read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	e.undo = append(e.undo, undoStep{path: path, old: old})
	return e.s.removeDurably(path)
}

func (e *edit) rollback() error {
	var errs []error
	for i := len(e.undo) - 1; i >= 0; i-- {
		u := e.undo[i]
		var err error
		if u.old == nil {
			err = e.s.removeDurably(u.path)
		} else {
			err = e.s.writeAtomic(u.path, u.old)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// errTooBig is a file longer than any the agent writes.
var errTooBig = fmt.Errorf("more than the %d bytes a registration takes", maxPersistedFile)

// read returns a file's contents, refusing one over maxPersistedFile.
func (s *store) read(path string) ([]byte, error) {
	info, err := s.fs.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > maxPersistedFile {
		return nil, fmt.Errorf("%s: %d bytes: %w", path, info.Size(), errTooBig)
	}
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, info.Size())
	n, err := f.ReadAt(buf, 0)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && n < len(buf) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf[:n], nil
}

// writeAtomic replaces path with data: written to a temporary file beside
// it, fsynced, renamed over path, and the directory fsynced.
func (s *store) writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := s.ensureDir(dir); err != nil {
		return err
	}
	tmp := path + tmpSuffix
	f, err := s.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", tmp, err), f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(fmt.Errorf("sync %s: %w", tmp, err), f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := s.fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return s.syncDir(dir)
}

// removeDurably removes path and fsyncs its directory.
func (s *store) removeDurably(path string) error {
	if err := s.fs.Remove(path); err != nil {
		return err
	}
	return s.syncDir(filepath.Dir(path))
}

// ensureDir makes dir once per process, and fsyncs each directory above it
// up to the data directory, so that the entries it may have made survive a
// crash too. The data directory's own entry is its maker's (the server
// makes it for its raft data).
func (s *store) ensureDir(dir string) error {
	if s.ready[dir] {
		return nil
	}
	if err := s.fs.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	for d := dir; d != s.dir && strings.HasPrefix(d, s.dir+string(filepath.Separator)); d = filepath.Dir(d) {
		if err := s.syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	s.ready[dir] = true
	return nil
}

func (s *store) syncDir(dir string) error {
	d, err := s.fs.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		return errors.Join(fmt.Errorf("sync %s: %w", dir, err), d.Close())
	}
	return d.Close()
}

// saveCheckState records a TTL check's status until expires.
func (s *store) saveCheckState(id, status, output string, expires time.Time) error {
	return s.change(func(e *edit) error {
		return e.put(s.path(checkStateDir, id), persistedCheckState{CheckID: id, Status: status, Output: output, Expires: expires})
	})
}

// loaded is what a start finds in the data directory.
type loaded struct {
	services []persistedService
	checks   []persistedCheck
	states   map[string]persistedCheckState // by check ID
	// paths names the file each service and check came from, so a
	// restore that drops one can remove it.
	servicePath map[string]string
	checkPath   map[string]string
}

// load reads every file the agent kept. A directory or file that cannot be
// read is an error (the start fails, as Consul's does); a file that does
// not decode is reported through bad and skipped, and a check state that
// does not decode or has expired is removed, as Consul treats them.
func (s *store) load(now time.Time, bad func(path string, err error)) (loaded, error) {
	out := loaded{states: map[string]persistedCheckState{}, servicePath: map[string]string{}, checkPath: map[string]string{}}
	err := s.each(servicesDir, bad, func(path string, data []byte) error {
		var p persistedService
		if err := json.Unmarshal(data, &p); err != nil || p.Service.ID == "" {
			return corrupt(err)
		}
		out.services = append(out.services, p)
		out.servicePath[p.Service.ID] = path
		return nil
	})
	if err != nil {
		return out, err
	}
	err = s.each(checksDir, bad, func(path string, data []byte) error {
		var p persistedCheck
		if err := json.Unmarshal(data, &p); err != nil || p.Check.CheckID == "" {
			return corrupt(err)
		}
		out.checks = append(out.checks, p)
		out.checkPath[p.Check.CheckID] = path
		return nil
	})
	if err != nil {
		return out, err
	}
	err = s.each(checkStateDir, bad, func(path string, data []byte) error {
		var p persistedCheckState
		if err := json.Unmarshal(data, &p); err != nil || p.CheckID == "" || !checks.ValidStatus(p.Status) {
			return errors.Join(corrupt(err), s.removeDurably(path))
		}
		if !now.Before(p.Expires) {
			// Its TTL has run out: the check starts critical.
			if err := s.removeDurably(path); err != nil {
				return fmt.Errorf("remove expired state: %w", err)
			}
		}
		if now.Before(p.Expires) {
			out.states[p.CheckID] = p
		}
		return nil
	})
	return out, err
}

func corrupt(err error) error {
	if err == nil {
		err = errors.New("no ID")
	}
	return fmt.Errorf("not a registration tenure wrote: %w", err)
}

// each calls f with the contents of every file in sub, in name order.
// Subdirectories are skipped and temporary files removed. A file too big
// to be the agent's, or one f refuses, is reported through bad; an I/O
// error stops the walk.
func (s *store) each(sub string, bad func(string, error), f func(path string, data []byte) error) error {
	dir := filepath.Join(s.dir, sub)
	entries, err := s.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, de := range entries {
		if de.IsDir() {
			continue
		}
		path := filepath.Join(dir, de.Name())
		if strings.HasSuffix(de.Name(), tmpSuffix) {
			// A write a crash cut short; the file it was to replace is
			// still whole beside it.
			if err := s.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", path, err)
			}
			continue
		}
		data, err := s.read(path)
		if errors.Is(err, errTooBig) {
			bad(path, err)
			continue
		}
		if err != nil {
			return err
		}
		if err := f(path, data); err != nil {
			bad(path, err)
		}
	}
	return nil
}
