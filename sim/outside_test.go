package sim_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// outsideGoMod is an outside module's go.mod: tenure from this checkout,
// and tenure's own replacements of raft, memberlist and serf (replace
// directives apply only in the main module, so a user copies them).
const outsideGoMod = `module example.com/ledger

go 1.26

require github.com/tenurekv/tenure v0.0.0

replace github.com/tenurekv/tenure => ROOT

replace github.com/hashicorp/memberlist => ROOT/third_party/memberlist

replace github.com/hashicorp/serf => ROOT/third_party/serf

replace github.com/hashicorp/raft v1.8.0 => ROOT/third_party/raft
`

// outsideTest is the outside module's test: a short run of two processes
// on recipe.Election, the belief in leading stated with AtMostOne.
const outsideTest = `package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenurekv/tenure/recipe"
	"github.com/tenurekv/tenure/sim"
)

func TestElectionUnderTheHarness(t *testing.T) {
	r := sim.Check(t, sim.Options{Seed: 1, Duration: 20 * time.Second, Faults: sim.NoFaults,
		Invariants: []sim.Invariant{sim.AtMostOne("leader")}, ArtifactDir: t.TempDir()},
		func(c *sim.Cluster) {
			for range 2 {
				c.Go(func(ctx context.Context, p *sim.Process) {
					e, err := p.Recipe().Election("outside", recipe.LockOptions{})
					if err != nil {
						p.Record("error", err.Error())
						return
					}
					for ctx.Err() == nil {
						h, err := e.Campaign(ctx)
						if err != nil {
							continue
						}
						p.Begin("leader")
						_ = p.Sleep(ctx, 2*time.Second)
						p.End("leader")
						_ = h.Release(context.WithoutCancel(ctx))
						_ = p.Sleep(ctx, time.Second)
					}
				})
			}
		})
	if len(r.History.Spans("leader")) < 2 {
		t.Fatalf("the processes led %d times", len(r.History.Spans("leader")))
	}
}
`

var flagOutside = flag.Bool("outside", false, "TestOutsideModuleRunsTheHarness: build and run a module outside tenure that imports sim (about 20 s; make sim-outside)")

// TestOutsideModuleRunsTheHarness: a module of its own, outside tenure,
// imports sim and runs a check with it. Hermetic: no network (GOPROXY=off,
// the module cache this build already fills), go.sum taken from tenure's,
// the module in a temporary folder.
func TestOutsideModuleRunsTheHarness(t *testing.T) {
	if !*flagOutside {
		t.Skip("builds and runs a module of its own, about 20 s: -outside (make sim-outside)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":         strings.ReplaceAll(outsideGoMod, "ROOT", root),
		"go.sum":         string(sum),
		"ledger_test.go": outsideTest,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GONOSUMDB=*", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	t.Log(run("test", "-count=1", "-v", "./..."))
}
