package proccluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
