package proccluster

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeAgentEnv makes this test binary, started by Start, a stand-in agent
// (fakeAgent) instead of running the tests.
const fakeAgentEnv = "PROCCLUSTER_FAKE_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(fakeAgentEnv) != "" {
		fakeAgent()
	}
	os.Exit(Main(m))
}

// fakeAgent prints its command line and a line a second, and exits
// cleanly on SIGTERM, as an agent does.
func fakeAgent() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println("args:", strings.Join(os.Args[1:], " "))
	for i := 0; ; i++ {
		select {
		case <-term:
			fmt.Println("left")
			os.Exit(0)
		case <-time.After(100 * time.Millisecond):
			fmt.Println("tick", i)
		}
	}
}

// TestAgentArgs: the command lines of a server, a client agent and a dev
// agent, in Consul's flags, with every listener Consul would open by
// default turned off.
func TestAgentArgs(t *testing.T) {
	ports := Ports{http: 18500, serfLAN: 18301, server: 18300}
	off := "-bind 127.0.0.1 -client 127.0.0.1 -http-port 18500 -serf-lan-port 18301 -server-port 18300 " +
		"-dns-port=-1 -grpc-port=-1 -grpc-tls-port=-1 -serf-wan-port=-1 -https-port=-1"
	for name, tc := range map[string]struct {
		agent Agent
		want  string
	}{
		"server": {
			Agent{Node: "s1", DataDir: "/d/s1", Ports: ports, server: true, bootstrapExpect: 3,
				RetryJoin: []string{"127.0.0.1:1", "127.0.0.1:2"}, logLevel: "debug", Extra: []string{"-hcl", "x = 1"}},
			"agent -server -bootstrap-expect 3 -node s1 -data-dir /d/s1 " + off +
				" -retry-join 127.0.0.1:1 -retry-join 127.0.0.1:2 -retry-interval 1s -log-level debug -hcl x = 1",
		},
		"client joining nothing": {
			Agent{Node: "c1", DataDir: "/d/c1", Ports: ports, Datacenter: "dc2"},
			"agent -node c1 -data-dir /d/c1 " + off + " -datacenter dc2",
		},
		"dev": {
			Agent{Node: "d", DataDir: "/ignored", Ports: ports, dev: true, server: true, bootstrapExpect: 3},
			"agent -dev -node d " + off,
		},
	} {
		if got := strings.Join(tc.agent.args(), " "); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, tc.want)
		}
	}
}

func TestFreePorts(t *testing.T) {
	p, err := FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	if p.http == p.serfLAN || p.http == p.server || p.serfLAN == p.server || p.http == 0 {
		t.Errorf("ports %+v, want three distinct ones", p)
	}
	if got := p.serfAddr(); got != fmt.Sprintf("127.0.0.1:%d", p.serfLAN) {
		t.Errorf("SerfAddr %q", got)
	}
}

// TestProcSignals starts stand-in agents and pauses, resumes, stops and
// kills them, with output in memory and in a log file.
func TestProcSignals(t *testing.T) {
	t.Setenv(fakeAgentEnv, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := Agent{Node: "fake", DataDir: t.TempDir()}

	p, err := Start(self, a, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	waitOutput(t, p, "tick 1")
	if !strings.Contains(p.Output(), "args: agent -node fake -data-dir") {
		t.Errorf("output %q lacks the command line", p.Output())
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a tick due by then is printed on resuming
	paused := p.Output()
	time.Sleep(300 * time.Millisecond)
	if p.Output() != paused {
		t.Errorf("a paused process went on writing")
	}
	if err := p.resume(); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, fmt.Sprintf("tick %d", strings.Count(paused, "tick")+1))
	if err := p.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if p.Running() || !strings.HasSuffix(p.Output(), "left\n") {
		t.Errorf("after Stop: running %v, output %q", p.Running(), p.Output())
	}
	if err := p.Kill(); err != nil {
		t.Errorf("kill of an ended process: %v", err)
	}

	log := filepath.Join(t.TempDir(), "fake.log")
	for i := range 2 {
		a.Node = fmt.Sprintf("fake%d", i)
		p, err := Start(self, a, log)
		if err != nil {
			t.Fatal(err)
		}
		waitOutput(t, p, "-node "+a.Node+" ")
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err == nil || p.Running() {
			t.Errorf("after Kill of a paused process: running %v, exit %v", p.Running(), err)
		}
		select {
		case <-p.done():
		default:
			t.Errorf("Exited not closed after Kill")
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "args: "); n != 2 {
		t.Errorf("the log holds %d starts, want both appended:\n%s", n, b)
	}
}

func waitOutput(t *testing.T, p *Proc, want string) {
	t.Helper()
	if err := Poll(10*time.Second, func() error {
		if !strings.Contains(p.Output(), want) {
			return fmt.Errorf("output %q lacks %q", p.Output(), want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestTails(t *testing.T) {
	b := &tailBuffer{max: 8}
	for _, s := range []string{"0123", "456789", "ab"} {
		_, _ = b.Write([]byte(s))
	}
	if got := b.String(); got != "456789ab" {
		t.Errorf("tailBuffer kept %q", got)
	}
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int64]string{4: "6789", 100: "0123456789"} {
		if got, err := fileTail(path, n); err != nil || got != want {
			t.Errorf("fileTail(%d) = %q, %v; want %q", n, got, err, want)
		}
	}
}

// TestTenureCluster starts real tenure agents: a server and a client agent
// joined to it, the client killed and started again on its data, and a dev
// agent. It builds tenure, so it runs with TENURE_CLUSTER_TEST=1 only.
func TestTenureCluster(t *testing.T) {
	if os.Getenv("TENURE_CLUSTER_TEST") == "" {
		t.Skip("set TENURE_CLUSTER_TEST=1 to start tenure processes")
	}
	bin := BuildTenure(t)
	c := Up(t, bin, Options{servers: 1, Clients: 1})
	if names := []string{c.Nodes[0].Name(), c.Nodes[1].Name()}; !slices.Equal(names, []string{"s1", "c1"}) {
		t.Errorf("nodes %v", names)
	}
	if lead := c.Leader(1); lead != 0 {
		t.Errorf("leader %d, want the server", lead)
	}
	c.Kill(1)
	c.Start(1)
	c.WaitReady(1)
	c.Stop(1)
	c.Stop(0)

	ports, err := FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	dev, err := Start(bin, Agent{Node: "dev", dev: true, Ports: ports}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Kill()
	if err := Poll(30*time.Second, func() error { return serves(ports.HTTPAddr(), "dev", []string{"dev"}) }); err != nil {
		t.Fatalf("dev agent: %v; its output ends:\n%s", err, dev.Output())
	}
	if err := dev.stop(); err != nil {
		t.Error(err)
	}
}
