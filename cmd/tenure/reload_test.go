package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// startReloadable starts `tenure agent -dev -config-file path` in process
// on free loopback ports with the reload hook runAgent installs; the agent
// stops when the test ends.
func startReloadable(t *testing.T, path string) (string, *reloader) {
	t.Helper()
	var lastErr error
	for range 3 {
		ports := freeLoopbackPorts(t, 3)
		args := []string{"-dev", "-node", "n1", "-bind", "127.0.0.1", "-client", "127.0.0.1", "-http-port", ports[0],
			"-server-port", ports[1], "-serf-lan-port", ports[2], "-config-file", path}
		s, _, err := settingsFrom(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.LevelFromString(s.LogLevel), Output: io.Discard})
		r := &reloader{args: args, logger: logger}
		s.reload = r.reload
		a, err := s.start(logger)
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		if err := r.load(a, s); err != nil {
			t.Fatalf("load the config's services and checks: %v", err)
		}
		return "http://" + a.HTTPAddr(), r
	}
	t.Fatalf("start an agent: %v", lastErr)
	return "", nil
}

func put(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// agentIDs lists the IDs GET /v1/agent/<what> answers with, sorted.
func agentIDs(t *testing.T, base, what string) []string {
	t.Helper()
	resp, err := http.Get(base + "/v1/agent/" + what)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// S80: services and checks in config files are registered at start; a
// reload re-reads the files, replaces the config's services and checks
// (leaving API-registered ones alone) and applies log_level; a config that
// does not load is answered 500 and changes nothing.
func TestConfigServicesAndReload(t *testing.T) {
	dir := t.TempDir()
	write := configWriter(t, dir)
	path := write("agent.json", `{"service": {"name": "redis", "port": 1234, "Meta": {"some": "meta"},
		"check": {"id": "redis-ttl", "ttl": "30s"}}, "check": {"name": "node-ttl", "ttl": "10s"}}`)
	base, r := startReloadable(t, path)

	if got, want := agentIDs(t, base, "services"), []string{"redis"}; !slices.Equal(got, want) {
		t.Fatalf("services at start = %v, want %v", got, want)
	}
	if got, want := agentIDs(t, base, "checks"), []string{"node-ttl", "redis-ttl"}; !slices.Equal(got, want) {
		t.Fatalf("checks at start = %v, want %v", got, want)
	}
	if code, body := put(t, base+"/v1/agent/service/register", `{"Name": "api"}`); code != http.StatusOK {
		t.Fatalf("register over HTTP: %d %s", code, body)
	}

	write("agent.json", `{"log_level": "debug", "services": [{"name": "web", "port": 80}], "checks": [{"name": "web-ttl", "service_id": "web", "ttl": "5s"}]}`)
	if code, body := put(t, base+"/v1/agent/reload", ""); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	if got, want := agentIDs(t, base, "services"), []string{"api", "web"}; !slices.Equal(got, want) {
		t.Errorf("services after reload = %v, want %v", got, want)
	}
	if got, want := agentIDs(t, base, "checks"), []string{"web-ttl"}; !slices.Equal(got, want) {
		t.Errorf("checks after reload = %v, want %v", got, want)
	}
	if got := r.logger.GetLevel(); got != hclog.Debug {
		t.Errorf("log level after reload = %v, want debug", got)
	}

	for name, bad := range map[string]string{
		"unknown key":  `{"service": {"name": "x"}, "bogus": 1}`,
		"no name":      `{"service": {"port": 80}}`,
		"bad duration": `{"check": {"name": "c", "ttl": "bad"}}`,
	} {
		write("agent.json", bad)
		code, body := put(t, base+"/v1/agent/reload", "")
		if code != http.StatusInternalServerError || body == "" {
			t.Errorf("%s: reload = %d %q, want 500 and the error", name, code, body)
		}
	}
	// A refused parse changes nothing; a refused registration (no name)
	// has removed the config's old services first, as Consul's does.
	if got := agentIDs(t, base, "services"); !slices.Contains(got, "api") {
		t.Errorf("services after refused reloads = %v, want api kept", got)
	}
}

// tenure validate reads config services with the register endpoint's
// decoder: a bad field is refused.
func TestValidateConfigServices(t *testing.T) {
	dir := t.TempDir()
	write := configWriter(t, dir)
	write("ok.hcl", "service {\n name = \"web\"\n port = 80\n meta { a = \"b\" }\n check { id = \"w\"\n ttl = \"5s\" }\n}\n")
	s, _, err := settingsFrom(t, "-dev", "-config-file", filepath.Join(dir, "ok.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	defs, err := s.configDefinitions()
	if err != nil || len(defs.Services) != 1 || defs.Services[0].Check == nil || defs.Services[0].Check.ID != "w" ||
		defs.Services[0].Meta["a"] != "b" {
		t.Fatalf("HCL service = %+v, %v", defs, err)
	}
	write("bad.json", `{"service": {"name": "web", "port": "eighty"}}`)
	if _, _, err := settingsFrom(t, "-dev", "-config-file", filepath.Join(dir, "bad.json")); err == nil {
		t.Error("a service with a string port was accepted")
	}
}
