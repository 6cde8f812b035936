package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The S65 cases are caught by agents that do not hold a create until their
// registration: tenure binaries built with a hold cut out (go build
// -overlay), a client agent's and a server agent's, each run as the cases'
// agent beside the in-process server. The same cases pass with the tenure
// binary as built (TestConformance).
func TestHeldCreateCasesCatchAgentsWithoutHold(t *testing.T) {
	t.Parallel()
	if testing.Short() || *flagAddr != "" {
		t.Skip("builds its own agents and runs them beside the in-process server; not with -short or -addr")
	}
	base, _, _ := serverUnderTest(t)
	for _, m := range []struct{ name, file, find, repl string }{
		{"client-agent-never-holds", "impl/httpapi/clientregistered.go",
			"\tif a.registered.Load() {\n", "\tif !a.registered.Load() {\n"},
		{"server-agent-never-holds", "impl/agent/registeredgate.go",
			"\t\tif r.URL.Path == \"/v1/session/create\" {\n", "\t\tif false {\n"},
	} {
		t.Run(m.name, func(t *testing.T) {
			bin := buildMutantTenure(t, m.file, m.find, m.repl)
			rep := Run(context.Background(), Options{Addr: base, Profile: Tenure, Filter: `^S65/`, Agent: bin})
			if rep.Failed == 0 {
				t.Fatalf("mutant %s survived S65: %+v", m.name, rep)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}

// buildMutantTenure builds the tenure binary with find replaced by repl in
// file (relative to the module root); find must occur exactly once, so a
// change to the source cannot make the mutant silently the original.
func buildMutantTenure(t *testing.T, file, find, repl string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	if n := strings.Count(string(b), find); n != 1 {
		t.Fatalf("mutant text occurs %d times in %s, want once: %q", n, file, find)
	}
	dir := t.TempDir()
	mutated := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(mutated, []byte(strings.Replace(string(b), find, repl, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {src: mutated}})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tenure")
	if out, err := exec.Command("go", "build", "-overlay", ov, "-o", bin, "github.com/tenurekv/tenure/cmd/tenure").CombinedOutput(); err != nil {
		t.Fatalf("build tenure with %s mutated: %v\n%s", file, err, out)
	}
	return bin
}
