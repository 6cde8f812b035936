package local

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/sim/simdisk"
)

// restarted is an agent on dir, as a restart finds it: built, restored,
// not yet syncing. Its log is returned for the restore's reports.
func restarted(t *testing.T, fsys disk.FS, dir string) (*Agent, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	// Interval checks first run a whole interval after they start, so
	// none runs during a test.
	late := func(d time.Duration) time.Duration { return d }
	a := NewAgent(Config{Node: node, Stagger: late, Sync: SyncConfig{Stagger: zero}, DataDir: dir, Disk: fsys,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &log})}, NewMemCatalog())
	if err := a.Restore(); err != nil {
		t.Fatalf("restore: %v", err)
	}
	t.Cleanup(a.Close)
	return a, &log
}

func registerService(t *testing.T, a *Agent, body string) {
	t.Helper()
	def, err := DecodeService([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterService(def, checks.Remote, false, ""); err != nil {
		t.Fatalf("register %s: %v", body, err)
	}
}

func registerCheck(t *testing.T, a *Agent, body string) {
	t.Helper()
	def, err := checks.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterCheck(def, checks.Remote, ""); err != nil {
		t.Fatalf("register %s: %v", body, err)
	}
}

// view is the agent's services and checks one per line, for comparing
// what two runs hold.
func view(a *Agent) string {
	var lines []string
	for _, s := range a.State().Services() {
		lines = append(lines, fmt.Sprintf("service %s %s tags=%v %s:%d meta=%v w=%v", s.ID, s.Service, s.Tags, s.Address, s.Port, s.Meta, s.Weights))
	}
	for _, c := range a.State().Checks() {
		lines = append(lines, fmt.Sprintf("check %s %q svc=%s(%s) %s %q type=%s notes=%q", c.CheckID, c.Name, c.ServiceID, c.ServiceName, c.Status, c.Output, c.Type, c.Notes))
	}
	return strings.Join(lines, "\n")
}

// TestRegistrationsSurviveARestart: services and checks registered through
// the API, maintenance included, come back after a restart; a TTL check
// with the status and output an update gave it (its TTL has not run out),
// every other check critical until it runs.
func TestRegistrationsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	a, _ := restarted(t, nil, dir)
	registerService(t, a, `{"ID":"web1","Name":"web","Tags":["v1"],"Port":80,"Meta":{"k":"v"},
		"Checks":[{"TTL":"1h","Status":"passing"},{"HTTP":"http://127.0.0.1:1/","Interval":"1h","Status":"passing"}]}`)
	registerCheck(t, a, `{"Name":"disk","TTL":"1h"}`)
	if err := a.UpdateTTL("disk", checks.Warning, "90% full"); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableNodeMaintenance("upgrade", ""); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableServiceMaintenance("web1", "", ""); err != nil {
		t.Fatal(err)
	}
	before := view(a)
	a.Close()

	b, log := restarted(t, nil, dir)
	after := view(b)
	// Both service checks were registered passing and never updated: a
	// status only a pass, warn, fail or update gave is kept, as in Consul.
	want := strings.ReplaceAll(before, `svc=web1(web) passing`, `svc=web1(web) critical`)
	if after != want {
		t.Fatalf("after a restart:\n%s\nwant:\n%s", after, want)
	}
	if log.Len() > 0 {
		t.Fatalf("restore reported: %s", log)
	}
	// The restored TTL check runs: a pass lands.
	if err := b.UpdateTTL("service:web1:1", checks.Passing, "ok"); err != nil {
		t.Fatal(err)
	}
}

// TestDeregistrationsSurviveARestart: what was deregistered, or switched
// off, stays gone, and leaves no file behind.
func TestDeregistrationsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	a, _ := restarted(t, nil, dir)
	registerService(t, a, `{"ID":"web1","Name":"web","Check":{"TTL":"1h"}}`)
	registerService(t, a, `{"ID":"web2","Name":"web","Checks":[{"CheckID":"a","TTL":"1h"},{"CheckID":"b","TTL":"1h"}]}`)
	registerCheck(t, a, `{"Name":"disk","TTL":"1h"}`)
	if err := a.UpdateTTL("disk", checks.Passing, ""); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableNodeMaintenance("", ""); err != nil {
		t.Fatal(err)
	}
	if err := a.DeregisterService("web1"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeregisterCheck("disk"); err != nil {
		t.Fatal(err)
	}
	if err := a.DisableNodeMaintenance(); err != nil {
		t.Fatal(err)
	}
	// A re-registration that drops one of the service's checks.
	def, err := DecodeService([]byte(`{"ID":"web2","Name":"web","Checks":[{"CheckID":"a","TTL":"1h"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterService(def, checks.Remote, true, ""); err != nil {
		t.Fatal(err)
	}
	before := view(a)
	a.Close()
	b, _ := restarted(t, nil, dir)
	if after := view(b); after != before || strings.Contains(after, "web1") || strings.Contains(after, "disk") {
		t.Fatalf("after a restart:\n%s\nwant:\n%s", after, before)
	}
	files := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files != 2 { // web2 and its check a
		t.Fatalf("%d files in the data directory, want 2", files)
	}
}

// TestCheckStateKeptUntilItsTTLRunsOut: a TTL check comes back with its
// status only while its TTL, counted from the last update, has not run
// out; after that it comes back critical and its state file is gone.
func TestCheckStateKeptUntilItsTTLRunsOut(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		a, _ := restarted(t, nil, dir)
		registerCheck(t, a, `{"Name":"app","TTL":"30s"}`)
		if err := a.UpdateTTL("app", checks.Passing, "fine"); err != nil {
			t.Fatal(err)
		}
		a.Close()
		time.Sleep(29 * time.Second)
		b, _ := restarted(t, nil, dir)
		if c, _ := b.State().Check("app"); c.Status != checks.Passing || c.Output != "fine" {
			t.Fatalf("within its TTL the check came back %s %q", c.Status, c.Output)
		}
		b.Close()
		time.Sleep(time.Second)
		c3, _ := restarted(t, nil, dir)
		if c, _ := c3.State().Check("app"); c.Status != checks.Critical || c.Output != "" {
			t.Fatalf("after its TTL the check came back %s %q", c.Status, c.Output)
		}
		if _, err := os.Stat(filepath.Join(dir, checkStateDir, fileName("app"))); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("expired state file still there: %v", err)
		}
	})
}

// TestCorruptFilesAreSkipped: a file that does not decode is reported and
// skipped, not fatal, as Consul treats it: a service or check file stays
// where it is, a check state file is removed, temporary files left by a
// crash are removed, and everything else comes back.
func TestCorruptFilesAreSkipped(t *testing.T) {
	dir := t.TempDir()
	a, _ := restarted(t, nil, dir)
	registerService(t, a, `{"ID":"web1","Name":"web","Check":{"TTL":"1h"}}`)
	if err := a.UpdateTTL("service:web1", checks.Passing, ""); err != nil {
		t.Fatal(err)
	}
	a.Close()
	junk := map[string]string{
		filepath.Join(dir, servicesDir, "junk"):             "{not json",
		filepath.Join(dir, checksDir, "junk"):               `{"Check":{}}`,
		filepath.Join(dir, checkStateDir, "junk"):           `{"CheckID":"x","Status":"bogus"}`,
		filepath.Join(dir, servicesDir, "half"+tmpSuffix):   `{"Serv`,
		filepath.Join(dir, checkStateDir, "half"+tmpSuffix): ``,
	}
	for p, data := range junk {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, log := restarted(t, nil, dir)
	if got := view(b); !strings.Contains(got, "service web1") || !strings.Contains(got, "check service:web1") ||
		!strings.Contains(got, "passing") {
		t.Fatalf("the good files did not come back:\n%s", got)
	}
	for p := range junk {
		_, err := os.Stat(p)
		kept := strings.HasSuffix(p, filepath.Join(servicesDir, "junk")) || strings.HasSuffix(p, filepath.Join(checksDir, "junk"))
		if kept != (err == nil) {
			t.Errorf("%s: kept %v, stat %v", p, kept, err)
		}
	}
	if n := strings.Count(log.String(), "does not decode"); n != 3 {
		t.Fatalf("restore reported %d corrupt files, want 3:\n%s", n, log)
	}
}

// TestUnreadableDataDirFailsTheStart: a directory that cannot be read is
// an error, as in Consul, not an empty agent.
func TestUnreadableDataDirFailsTheStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, servicesDir), []byte("a file, not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := NewAgent(Config{Node: node, DataDir: dir}, NewMemCatalog())
	defer a.Close()
	if err := a.Restore(); err == nil {
		t.Fatal("restore over an unreadable services directory succeeded")
	}
}

// TestRestoreDropsWhatNoLongerFits: a check whose service is gone, or that
// the agent's settings no longer allow, is dropped with its file.
func TestRestoreDropsWhatNoLongerFits(t *testing.T) {
	dir := t.TempDir()
	a := NewAgent(Config{Node: node, DataDir: dir, Policy: checks.Policy{EnableScriptChecks: true}}, NewMemCatalog())
	registerService(t, a, `{"ID":"web1","Name":"web","Check":{"TTL":"1h"}}`)
	registerCheck(t, a, `{"Name":"script","Args":["true"],"Interval":"1h"}`)
	a.Close()
	if err := os.Remove(filepath.Join(dir, servicesDir, fileName("web1"))); err != nil {
		t.Fatal(err)
	}
	b, log := restarted(t, nil, dir) // script checks now off
	if got := view(b); got != "" {
		t.Fatalf("restored:\n%s", got)
	}
	if !strings.Contains(log.String(), "is gone") || !strings.Contains(log.String(), "Scripts are disabled") {
		t.Fatalf("restore log:\n%s", log)
	}
	for _, id := range []string{"service:web1", "script"} {
		if _, err := os.Stat(filepath.Join(dir, checksDir, fileName(id))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file of dropped check %s: %v", id, err)
		}
	}
}

// TestFailedWriteChangesNothing: when the disk refuses the write, the
// registration answers 500 and changes nothing, in the agent or on disk.
func TestFailedWriteChangesNothing(t *testing.T) {
	d := simdisk.New()
	a, _ := restarted(t, d, "/data")
	registerService(t, a, `{"ID":"web1","Name":"web","Tags":["v1"],"Check":{"TTL":"1h"}}`)
	before := view(a)
	d.FailSyncs(errors.New("EIO"))
	def, err := DecodeService([]byte(`{"ID":"web1","Name":"web","Tags":["v2"],"Check":{"TTL":"1h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = a.RegisterService(def, checks.Remote, false, "")
	if code, _ := codeOf(err); code != 500 {
		t.Fatalf("register on a failing disk: %v", err)
	}
	if err := a.DeregisterService("web1"); err == nil {
		t.Fatal("deregister on a failing disk succeeded")
	}
	if got := view(a); got != before {
		t.Fatalf("a refused call changed the agent:\n%s\nwant:\n%s", got, before)
	}
	d.FailSyncs(nil)
	a.Close()
	d.PowerLoss()
	d.PowerOn()
	b, _ := restarted(t, d, "/data")
	if got := view(b); got != strings.ReplaceAll(before, "passing", "critical") {
		t.Fatalf("after a power loss:\n%s\nwant:\n%s", got, before)
	}
}

// cutAfter is a disk whose power is cut (simdisk.CutPower) at its n-th
// change or fsync: the process runs on unaware, and a later power loss
// drops everything from the cut on. With inPlace, a rename copies the file
// over its target in place instead, unsynced: a disk without atomic
// renames, which the crash check must catch.
type cutAfter struct {
	*simdisk.Disk
	n, seen int
	inPlace bool
}

func (c *cutAfter) tick() {
	c.seen++
	if c.seen == c.n {
		c.CutPower()
	}
}

func (c *cutAfter) OpenFile(name string, flag int, perm fs.FileMode) (disk.File, error) {
	f, err := c.Disk.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &cutFile{File: f, c: c}, nil
}

func (c *cutAfter) Remove(name string) error { c.tick(); return c.Disk.Remove(name) }

func (c *cutAfter) Rename(from, to string) error {
	c.tick()
	if !c.inPlace {
		return c.Disk.Rename(from, to)
	}
	data, err := newStore(c.Disk, "/").read(from)
	if err != nil {
		return err
	}
	f, err := c.OpenFile(to, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return errors.Join(err, f.Close())
	}
	return errors.Join(f.Close(), c.Disk.Remove(from))
}

type cutFile struct {
	disk.File
	c *cutAfter
}

func (f *cutFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.tick()
	return f.File.WriteAt(p, off)
}
func (f *cutFile) Sync() error { f.c.tick(); return f.File.Sync() }

// TestPowerLossKeepsAWholeRegistration: the power goes at every step of
// re-registering a service (version 1 to version 2, with a new check),
// and the disk keeps a random part of what was not yet synced. After the
// restart every file is whole, one version or the other: the service is
// version 1 or 2, never missing or torn, its first check is there, and
// the new check may be there before the call returned. Once it has
// returned, version 2 exactly.
func TestPowerLossKeepsAWholeRegistration(t *testing.T) {
	if v := powerLossViolation(t, false); v != "" {
		t.Fatal(v)
	}
}

// TestPowerLossCheckCatchesInPlaceWrites shows the check above can fail:
// on a disk whose renames rewrite the target in place, some power loss
// leaves a registration missing or torn.
func TestPowerLossCheckCatchesInPlaceWrites(t *testing.T) {
	if v := powerLossViolation(t, true); v == "" {
		t.Fatal("no power loss harmed registrations written in place: the check cannot catch a torn file")
	}
}

// powerLossViolation runs TestPowerLossKeepsAWholeRegistration's check
// and describes the first violation, "" for none.
func powerLossViolation(t *testing.T, inPlace bool) string {
	v1 := `{"ID":"web1","Name":"web","Tags":["v1"],"Checks":[{"CheckID":"a","TTL":"1h"}]}`
	v2 := `{"ID":"web1","Name":"web","Tags":["v2"],"Checks":[{"CheckID":"a","TTL":"1h"},{"CheckID":"b","TTL":"2h"}]}`
	views := map[string]string{}
	for _, v := range []string{v1, v2} {
		a, _ := restarted(t, simdisk.New(), "/data")
		registerService(t, a, v)
		views[v] = view(a)
		a.Close()
	}
	known := map[string]bool{}
	for _, v := range views {
		for _, l := range strings.Split(v, "\n") {
			known[l] = true
		}
	}
	checkA := strings.Split(views[v1], "\n")[1]
	steps := 0
	for n := 1; ; n++ {
		for seed := range uint64(8) {
			c := &cutAfter{Disk: simdisk.New(), n: -1, inPlace: inPlace}
			a, _ := restarted(t, c, "/data")
			registerService(t, a, v1)
			c.seen, c.n = 0, n
			registerService(t, a, v2)
			steps = c.seen
			a.Close()
			c.PowerLossRand(rand.New(rand.NewPCG(seed, uint64(n))))
			c.PowerOn()
			c.n = -1
			b, log := restarted(t, c, "/data")
			got := view(b)
			if log.Len() > 0 {
				return fmt.Sprintf("power lost at step %d (seed %d): restore reported %s", n, seed, log)
			}
			if n > steps {
				if got != views[v2] {
					return fmt.Sprintf("power lost after the call returned (seed %d): got\n%s\nwant version 2:\n%s", seed, got, views[v2])
				}
				continue
			}
			lines := strings.Split(got, "\n")
			ok := strings.HasPrefix(lines[0], "service web1 ") && strings.Count(got, "service web1 ") == 1 &&
				strings.Contains(got, checkA)
			for _, l := range lines {
				ok = ok && known[l]
			}
			if !ok {
				return fmt.Sprintf("power lost at step %d of %d (seed %d): got\n%s\nwant the lines of version 1:\n%s\nor 2:\n%s",
					n, steps, seed, got, views[v1], views[v2])
			}
		}
		if n > steps {
			break
		}
	}
	if steps < 6 {
		return fmt.Sprintf("re-registering took only %d disk steps", steps)
	}
	return ""
}

// TestConfigRegistrationsAreNotKept: what the config files register comes
// back from them, not from the data directory, as in Consul, so nothing of
// it is written there. Written (as the first merge of reload and
// persistence did), the restore refuses the files and reports each one,
// which fails here.
func TestConfigRegistrationsAreNotKept(t *testing.T) {
	dir := t.TempDir()
	a, _ := restarted(t, nil, dir)
	svc, err := DecodeService([]byte(`{"ID":"cfg1","Name":"cfg","Check":{"TTL":"1h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	chk, err := checks.Decode([]byte(`{"Name":"cfgdisk","TTL":"1h"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.LoadConfig(ConfigDefinitions{Services: []ServiceDefinition{svc}, Checks: []checks.Definition{chk}}); err != nil {
		t.Fatal(err)
	}
	registerService(t, a, `{"ID":"api1","Name":"api"}`)
	if got := view(a); !strings.Contains(got, "service cfg1") || !strings.Contains(got, "check cfgdisk") {
		t.Fatalf("config registrations missing before the restart:\n%s", got)
	}
	a.Close()

	b, log := restarted(t, nil, dir)
	if log.Len() > 0 {
		t.Errorf("the restore found files it refused: %s", log)
	}
	got := view(b)
	if strings.Contains(got, "cfg") {
		t.Errorf("a config registration came back from the data directory:\n%s", got)
	}
	if !strings.Contains(got, "service api1") {
		t.Errorf("the API registration did not come back:\n%s", got)
	}
}
