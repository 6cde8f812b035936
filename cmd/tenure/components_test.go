package main

import (
	"flag"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/agent"
)

var updateComponents = flag.Bool("update-components", false, "rewrite testdata/server-components.txt from the binary's server agent")

// serverComponentsFile lists the parts of the server agent
// `tenure agent -server` builds. The simulator's assembly test
// (sim/assembly_test.go) holds its servers to the same list, so a part
// wired into one and not the other fails one of the two tests.
const serverComponentsFile = "testdata/server-components.txt"

// TestServerComponents: the server agent the binary starts is built from
// the parts the file lists, no more and no fewer.
func TestServerComponents(t *testing.T) {
	ra := startServerAgent(t)
	defer func() {
		if err := ra.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	wt, _ := ra.(withTelemetry)
	a, ok := wt.runningAgent.(*agent.Agent)
	if !ok {
		t.Fatalf("-server started a %T, not a server agent", ra)
	}
	got := a.Components()
	path := filepath.FromSlash(serverComponentsFile)
	if *updateComponents {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := ReadComponents(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the binary's server agent is built from\n  %s\nbut %s lists\n  %s\n(run with -update-components after a deliberate change, and keep sim/assembly_test.go's list of accepted differences true)",
			strings.Join(got, "\n  "), serverComponentsFile, strings.Join(want, "\n  "))
	}
}

// ReadComponents reads a components file: one part per line.
func ReadComponents(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
}

// startServerAgent starts `tenure agent -server -bootstrap-expect 1
// -retry-join …` (joining itself) in
// process on free loopback ports, trying again on fresh ones if another
// process took one in between.
func startServerAgent(t *testing.T) runningAgent {
	t.Helper()
	var lastErr error
	for range 3 {
		ports := freeLoopbackPorts(t, 3)
		s, _, err := settingsFrom(t, "-server", "-bootstrap-expect", "1", "-node", "n1", "-data-dir", t.TempDir(),
			"-bind", "127.0.0.1", "-client", "127.0.0.1", "-http-port", ports[0], "-server-port", ports[1], "-serf-lan-port", ports[2],
			"-retry-join", "127.0.0.1:"+ports[2])
		if err != nil {
			t.Fatal(err)
		}
		ra, err := s.start(hclog.NewNullLogger())
		if err == nil {
			return ra
		}
		lastErr = err
	}
	t.Fatalf("start a server agent: %v", lastErr)
	return nil
}

// freeLoopbackPorts returns n TCP ports on 127.0.0.1 that were free a
// moment ago, all different.
func freeLoopbackPorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	return out
}
