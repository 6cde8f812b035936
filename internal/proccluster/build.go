package proccluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// tenurePackage is the command BuildTenure builds.
const tenurePackage = "github.com/tenurekv/tenure/cmd/tenure"

var built struct {
	once     sync.Once
	dir, bin string
	err      error
	// byMain is set by Main before any test runs: only then is there
	// someone to remove dir once every test is done.
	byMain bool
}

// BuildTenure returns tenure's binary, built from this module on the first
// call of the test binary and shared by the later ones. The package's
// TestMain must run its tests through Main, which removes the binary after
// them; without it BuildTenure fails the test.
func BuildTenure(t TB) string {
	t.Helper()
	if !built.byMain {
		t.Fatalf("proccluster.BuildTenure needs the package's TestMain to run the tests through proccluster.Main, which removes the binary")
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "tenure-build-")
		if built.err != nil {
			built.err = fmt.Errorf("build tenure: %w", built.err)
			return
		}
		bin := filepath.Join(built.dir, "tenure")
		if out, err := exec.Command("go", "build", "-o", bin, tenurePackage).CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build tenure: %w\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatalf("%v", built.err)
	}
	return built.bin
}

// Main is a TestMain body for the packages that use BuildTenure: it runs
// the tests, removes the binary if one was built, and returns the exit code.
//
//	func TestMain(m *testing.M) { os.Exit(proccluster.Main(m)) }
func Main(m interface{ Run() int }) int {
	built.byMain = true
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// BuildTenureMutant builds tenure with one deliberate bug: find replaced by
// repl in file (a path from the module root), through go build -overlay, so
// the tree is untouched. find must occur exactly once, or a change to the
// source could make the mutant the original without anyone noticing. The
// binary lives in dir (the caller's temporary directory).
func BuildTenureMutant(t TB, dir, file, find, repl string) string {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("find the module root: %v", err)
	}
	src := filepath.Join(filepath.Dir(strings.TrimSpace(string(root))), file)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	if n := strings.Count(string(b), find); n != 1 {
		t.Fatalf("mutant text occurs %d times in %s, want once: %q", n, file, find)
	}
	mutated := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(mutated, []byte(strings.Replace(string(b), find, repl, 1)), 0o600); err != nil {
		t.Fatalf("write mutant of %s: %v", file, err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {src: mutated}})
	if err != nil {
		t.Fatalf("overlay: %v", err)
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatalf("write overlay: %v", err)
	}
	bin := filepath.Join(dir, "tenure")
	if out, err := exec.Command("go", "build", "-overlay", ov, "-o", bin, tenurePackage).CombinedOutput(); err != nil {
		t.Fatalf("build tenure with %s mutated: %v\n%s", file, err, out)
	}
	return bin
}
