package checks

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEngine is a Docker Engine API on a unix socket in a temporary
// directory: one container, "web", whose execs print output and exit with
// the code the command's first argument names ("exit=N"); "paused" is a
// container that refuses execs.
type fakeEngine struct {
	host string // unix://…
	mu   sync.Mutex
	cmds map[string][]string // exec ID → command
	seen []string            // requests, "METHOD path"
	// multiplex frames the output as an engine does for a non-tty exec.
	multiplex bool
	output    string
	hang      chan struct{} // if set, start blocks until it closes
}

func startFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	dir, err := os.MkdirTemp("", "dk") // short: a socket path is limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{host: "unix://" + sock, cmds: map[string][]string{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

func (e *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.seen = append(e.seen, r.Method+" "+r.URL.Path)
	e.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "containers" && parts[2] == "exec":
		var body struct {
			Cmd                        []string
			AttachStdout, AttachStderr bool
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !body.AttachStdout || !body.AttachStderr {
			http.Error(w, "bad exec body", http.StatusBadRequest)
			return
		}
		switch parts[1] {
		case "web":
		case "paused":
			http.Error(w, `{"message":"container is paused"}`, http.StatusConflict)
			return
		default:
			http.Error(w, `{"message":"No such container"}`, http.StatusNotFound)
			return
		}
		e.mu.Lock()
		id := "exec" + string(rune('a'+len(e.cmds)))
		e.cmds[id] = body.Cmd
		e.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"Id":"` + id + `"}`))
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "exec" && parts[2] == "start":
		if e.hang != nil {
			select {
			case <-e.hang:
			case <-r.Context().Done():
				return
			}
		}
		if e.multiplex {
			w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
			for i, chunk := range []string{e.output[:len(e.output)/2], e.output[len(e.output)/2:]} {
				hdr := make([]byte, 8)
				hdr[0] = byte(1 + i) // stdout, then stderr
				binary.BigEndian.PutUint32(hdr[4:], uint32(len(chunk)))
				_, _ = w.Write(append(hdr, chunk...))
			}
			return
		}
		_, _ = w.Write([]byte(e.output))
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "exec" && parts[2] == "json":
		e.mu.Lock()
		cmd, ok := e.cmds[parts[1]]
		e.mu.Unlock()
		if !ok {
			http.Error(w, "no such exec", http.StatusNotFound)
			return
		}
		code := 0
		if len(cmd) > 0 && strings.HasPrefix(cmd[0], "exit=") {
			code = int(cmd[0][5] - '0')
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ExitCode": code, "Running": false})
	default:
		http.NotFound(w, r)
	}
}

func dockerDef(container string, args ...string) Definition {
	return Definition{Name: "d", DockerContainerID: container, Args: args, Interval: time.Second}
}

func dockerProbeOn(t *testing.T, host string, d Definition) (string, string) {
	t.Helper()
	d, err := Prepare(d, Remote, Policy{EnableScriptChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProber(d, host)
	if err != nil {
		t.Fatal(err)
	}
	return p.Probe(context.Background())
}

// TestDockerProbe: the exit code decides the status as for a script, the
// output is the exec's (unframed when the engine frames it), and a
// container the engine does not know or has paused, or an engine that is
// not there, makes the check critical with the reason as its output.
func TestDockerProbe(t *testing.T) {
	e := startFakeEngine(t)
	e.output = "all good\n"
	for _, tc := range []struct {
		args   []string
		status string
	}{{[]string{"exit=0"}, Passing}, {[]string{"exit=1"}, Warning}, {[]string{"exit=2"}, Critical}} {
		status, out := dockerProbeOn(t, e.host, dockerDef("web", tc.args...))
		if status != tc.status || out != "all good\n" {
			t.Errorf("%v: %s %q, want %s", tc.args, status, out, tc.status)
		}
	}
	e.multiplex = true
	if status, out := dockerProbeOn(t, e.host, dockerDef("web", "exit=0")); status != Passing || out != "all good\n" {
		t.Errorf("multiplexed: %s %q", status, out)
	}
	for container, want := range map[string]string{
		"ghost":  "create exec failed for unknown container ghost",
		"paused": "create exec failed since container paused is paused or stopped",
	} {
		if status, out := dockerProbeOn(t, e.host, dockerDef(container, "exit=0")); status != Critical || out != want {
			t.Errorf("%s: %s %q, want critical %q", container, status, out, want)
		}
	}
	status, out := dockerProbeOn(t, "unix://"+filepath.Join(t.TempDir(), "none.sock"), dockerDef("web", "exit=0"))
	if status != Critical || !strings.Contains(out, "create exec failed for container web") {
		t.Errorf("no engine: %s %q", status, out)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) < 3 || e.seen[0] != "POST /containers/web/exec" || !strings.HasSuffix(e.seen[1], "/start") || !strings.HasSuffix(e.seen[2], "/json") {
		t.Errorf("engine calls %v", e.seen)
	}
}

// TestDockerProbeBounded: the output kept is the tail, within the check's
// cap, with Consul's "Captured" note, and a run that does not end is cut
// at the check's timeout.
func TestDockerProbeBounded(t *testing.T) {
	e := startFakeEngine(t)
	e.output = strings.Repeat("x", 10000) + "END"
	d := dockerDef("web", "exit=0")
	d.OutputMaxSize = 100
	status, out := dockerProbeOn(t, e.host, d)
	if status != Passing || !strings.HasPrefix(out, "Captured 100 of 10003 bytes\n...\n") || !strings.HasSuffix(out, "END") {
		t.Errorf("long output: %s %.60q…", status, out)
	}
	e.hang = make(chan struct{})
	defer close(e.hang)
	d = dockerDef("web", "exit=0")
	d.Timeout = 50 * time.Millisecond
	if status, out := dockerProbeOn(t, e.host, d); status != Critical || !strings.HasPrefix(out, "Timed out (50ms) running check") {
		t.Errorf("hanging exec: %s %q", status, out)
	}
}

// TestDockerHost: the engine's address comes from the runner, then
// $DOCKER_HOST, then the default socket; addresses Docker does not take
// are refused when the check starts.
func TestDockerHost(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	if got := dockerHost(""); got != defaultDockerHost {
		t.Errorf("default: %s", got)
	}
	t.Setenv("DOCKER_HOST", "tcp://10.0.0.1:2375")
	if got := dockerHost(""); got != "tcp://10.0.0.1:2375" {
		t.Errorf("from the environment: %s", got)
	}
	if got := dockerHost("unix:///x.sock"); got != "unix:///x.sock" {
		t.Errorf("given: %s", got)
	}
	if c, err := newDockerClient("tcp://10.0.0.1:2375/base/"); err != nil || c.base != "http://10.0.0.1:2375/base" {
		t.Errorf("tcp host: %+v %v", c, err)
	}
	for _, bad := range []string{"10.0.0.1:2375", "npipe:////./pipe/docker_engine"} {
		if _, err := newDockerClient(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestRunnerRunsDockerCheck: a docker check registered on a runner reports
// through the engine the runner was given.
func TestRunnerRunsDockerCheck(t *testing.T) {
	e := startFakeEngine(t)
	e.output = "ok\n"
	got := make(chan string, 4)
	r := NewRunner(Options{DockerHost: e.host, Stagger: func(time.Duration) time.Duration { return 0 }},
		func(_, status, output string) { got <- status + " " + output })
	defer r.Close()
	d, err := Prepare(dockerDef("web", "exit=1"), Remote, Policy{EnableScriptChecks: true})
	if err != nil || d.Kind() != kindDocker {
		t.Fatalf("prepare: %v %s", err, d.Kind())
	}
	if err := r.Start(d); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "warning ok\n" {
		t.Fatalf("first report %q", s)
	}
}
