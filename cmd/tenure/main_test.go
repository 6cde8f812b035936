package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// configWriter returns a function that writes a config file into dir and
// returns its path.
func configWriter(t *testing.T, dir string) func(name, body string) string {
	return func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func settingsFrom(t *testing.T, args ...string) (settings, []string, error) {
	t.Helper()
	var warnings []string
	s, err := agentSettings(args, &bytes.Buffer{}, func(w string) { warnings = append(warnings, w) })
	return s, warnings, err
}

// TestAgentSettingsFromFlags: Consul's flags with Consul's meaning.
func TestAgentSettingsFromFlags(t *testing.T) {
	s, warnings, err := settingsFrom(t, "-server", "-bootstrap-expect", "3", "-node", "n1", "-data-dir", "/d",
		"-bind", "10.0.0.1", "-client", "0.0.0.0", "-http-port", "18500", "-server-port", "18300", "-serf-lan-port", "18301",
		"-retry-join", "10.0.0.2", "-join", "10.0.0.3:18301", "-dns-port=-1", "-grpc-port", "-1", "-grpc-tls-port=-1",
		"-serf-wan-port=-1", "-https-port=-1", "-encrypt", "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s=", "-log-level", "debug")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Server || s.BootstrapExpect != 3 || s.NodeName != "n1" || s.AdvertiseAddr != "10.0.0.1" ||
		s.Ports != (ports{HTTP: 18500, Server: 18300, SerfLAN: 18301, DNS: -1, GRPC: -1, GRPCTLS: -1, SerfWAN: -1, HTTPS: -1,
			dnsSet: true, grpcSet: true, grpcTLSSet: true, wanSet: true}) ||
		!slices.Equal(s.RetryJoin, []string{"10.0.0.2", "10.0.0.3:18301"}) || s.LogLevel != "debug" {
		t.Fatalf("parsed %+v", s)
	}
	if s.httpAdvertise() != "10.0.0.1:18500" {
		t.Errorf("HTTP on every interface advertises %s, want the advertise address", s.httpAdvertise())
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "'-join' is deprecated") {
		t.Errorf("warnings %q, want the -join deprecation", warnings)
	}

	dev, _, err := settingsFrom(t, "-dev")
	if err != nil || dev.NodeName == "" || dev.BindAddr != "127.0.0.1" || dev.httpAdvertise() != "127.0.0.1:8500" {
		t.Fatalf("-dev: %+v %v", dev, err)
	}
	// Consul turns an expectation of one into bootstrap mode, and warns
	// about both.
	one, warnings, err := settingsFrom(t, "-server", "-bootstrap-expect", "1", "-data-dir", "/d", "-bind", "127.0.0.1")
	if err != nil || !one.Bootstrap || one.BootstrapExpect != 0 {
		t.Errorf("-bootstrap-expect 1: bootstrap %v, expect %d, %v; want bootstrap mode", one.Bootstrap, one.BootstrapExpect, err)
	}
	if !slices.Equal(warnings, []string{"BootstrapExpect is set to 1; this is the same as Bootstrap mode.",
		"bootstrap = true: do not enable unless necessary"}) {
		t.Errorf("-bootstrap-expect 1 warnings %q", warnings)
	}
	boot, warnings, err := settingsFrom(t, "-server", "-bootstrap", "-data-dir", "/d", "-bind", "127.0.0.1")
	if err != nil || !boot.Bootstrap || !slices.Equal(warnings, []string{"bootstrap = true: do not enable unless necessary"}) {
		t.Errorf("-bootstrap: bootstrap %v, warnings %q, %v", boot.Bootstrap, warnings, err)
	}
}

// TestAgentSettingsRejectBadInput: each bad command line is refused with
// a message naming the problem, Consul's where Consul has one.
func TestAgentSettingsRejectBadInput(t *testing.T) {
	server := []string{"-server", "-data-dir", "/d", "-bind", "127.0.0.1"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown flag":               {[]string{"-dev", "-frobnicate"}, "flag provided but not defined"},
		"stray argument":             {[]string{"-dev", "extra"}, "unexpected arguments"},
		"server without data dir":    {[]string{"-server", "-bind", "127.0.0.1"}, "data_dir cannot be empty"},
		"negative bootstrap-expect":  {append(server, "-bootstrap-expect", "-1"), "bootstrap_expect cannot be -1"},
		"bootstrap-expect in dev":    {[]string{"-dev", "-bootstrap-expect", "3"}, "not allowed in dev mode"},
		"bootstrap-expect no server": {[]string{"-data-dir", "/d", "-bootstrap-expect", "3"}, "requires 'server = true'"},
		"bootstrap no server":        {[]string{"-data-dir", "/d", "-bootstrap"}, "'bootstrap = true' requires 'server = true'"},
		"bootstrap and expect":       {append(server, "-bootstrap", "-bootstrap-expect", "3"), "'bootstrap_expect > 0' and 'bootstrap = true' are mutually exclusive"},
		"dns port enabled":           {append(server, "-dns-port", "8600"), "no dns listener"},
		"grpc port enabled":          {append(server, "-grpc-port", "8502"), "no grpc listener"},
		"http port out of range":     {append(server, "-http-port", "70000"), "ports.http: invalid port: 70000"},
		"bind not an ip":             {[]string{"-server", "-data-dir", "/d", "-bind", "example.com"}, "bind_addr must be an ip address"},
		"advertise any":              {append(server, "-advertise", "0.0.0.0"), "Advertise address cannot be 0.0.0.0"},
		"bad encrypt key":            {append(server, "-encrypt", "c2hvcnQ="), "encrypt has invalid key"},
		"bad log level":              {[]string{"-dev", "-log-level", "loud"}, "unknown log level"},
		"ttl multiplier below 1":     {[]string{"-dev", "-ttl-multiplier", "0.5"}, "at least 1"},
	} {
		if _, _, err := settingsFrom(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q gave %v, want %q", name, tc.args, err, tc.want)
		}
	}
}

// TestAgentConfigFiles: JSON and HCL agent configs (files and a directory,
// in order, flags last) set the same settings; keys for subsystems tenure
// does not honour are warned about once and ignored; a misspelled key is an
// error.
func TestAgentConfigFiles(t *testing.T) {
	dir := t.TempDir()
	write := configWriter(t, dir)
	confDir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"a.json": `{"server": true, "bootstrap_expect": 3, "data_dir": "/var/lib/x", "bind_addr": "127.0.0.1",
			"ports": {"http": 18500, "dns": 8600}, "ui_config": {"enabled": true}, "telemetry": {}, "retry_join": ["a"]}`,
		"b.hcl":       "node_name = \"from-hcl\"\nretry_interval = \"5s\"\nports {\n  serf_lan = 18301\n}\nconnect {\n  enabled = true\n}\nui_config {\n  enabled = false\n}\n",
		"ignored.txt": "not a config",
	} {
		if err := os.WriteFile(filepath.Join(confDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	extra := write("extra.json", `{"log_level": "warn", "start_join": ["b"]}`)
	s, warnings, err := settingsFrom(t, "-config-dir", confDir, "-config-file", extra, "-node", "from-flag", "-retry-join", "c")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Server || s.BootstrapExpect != 3 || s.DataDir != "/var/lib/x" || s.Ports.HTTP != 18500 || s.Ports.SerfLAN != 18301 ||
		s.NodeName != "from-flag" || s.RetryInterval != 5*time.Second || s.LogLevel != "warn" ||
		!slices.Equal(s.RetryJoin, []string{"a", "b", "c"}) {
		t.Fatalf("settings %+v", s)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{`"ports.dns"`, `"ui_config.enabled"`, `"connect.enabled"`, "'start_join' field is deprecated"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning for %s in %q", want, joined)
		}
	}
	if strings.Count(joined, `"ui_config.enabled"`) != 1 {
		t.Errorf("ui_config.enabled, set in two files, warned %d times: %q", strings.Count(joined, `"ui_config.enabled"`), joined)
	}
	if strings.Contains(joined, "telemetry") {
		t.Errorf("an empty telemetry block sets nothing, yet was warned about: %q", joined)
	}

	for name, tc := range map[string]struct{ file, want string }{
		"misspelled key":     {write("typo.json", `{"bootstrap_expct": 3}`), "invalid config key bootstrap_expct"},
		"misspelled port":    {write("port.json", `{"ports": {"htp": 1}}`), "invalid config key ports.htp"},
		"misspelled in list": {write("list.json", `{"services": [{"name": "a"}, {"nmae": "b"}]}`), "invalid config key services[1].nmae"},
		"block not a block":  {write("block.json", `{"acl": 5}`), "acl: want a block"},
		"wrong type":         {write("type.json", `{"server": "yes"}`), "server: want true or false"},
		"bad duration":       {write("dur.hcl", "retry_interval = \"soon\"\n"), "retry_interval"},
		"broken json":        {write("broken.json", `{"server": `), "broken.json"},
		"blank json":         {write("blank.json", " \n"), "unexpected end of JSON input"},
		"unknown extension":  {write("conf.yaml", "server: true"), "has unknown extension; must be .hcl or .json"},
		"missing file":       {filepath.Join(dir, "nope.json"), "no such file"},
		"bad value via file": {write("neg.json", `{"server": true, "data_dir": "/d", "bootstrap_expect": -2}`), "bootstrap_expect cannot be -2"},
	} {
		if _, _, err := settingsFrom(t, "-config-file", tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// TestEmptyConfigFiles: a file with no bytes is skipped, in either format
// and from a directory too, as Consul skips it; consul/api's reload test
// starts its agent on one.
func TestEmptyConfigFiles(t *testing.T) {
	dir := t.TempDir()
	write := configWriter(t, dir)
	confDir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	configWriter(t, confDir)("a.json", "")
	configWriter(t, confDir)("b.hcl", "")
	s, warnings, err := settingsFrom(t, "-dev", "-config-file", write("empty.json", ""), "-config-file", write("empty.hcl", ""),
		"-config-dir", confDir)
	if err != nil || len(warnings) != 0 || s.Datacenter != "dc1" {
		t.Errorf("empty files: %v, warnings %q, datacenter %q", err, warnings, s.Datacenter)
	}
}

func TestRunDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
		t.Errorf("no command: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut.String())
	}
	if code := run([]string{"agent", "-dev", "-frobnicate"}, &out, &errOut); code != 2 {
		t.Errorf("bad agent flags: exit %d", code)
	}
	if code := run([]string{"help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "conform") {
		t.Errorf("help: exit %d, stdout %q", code, out.String())
	}
}

// TestVersion: `tenure version` answers as `consul version` does.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "tenure v"+version+"\n") ||
		!strings.Contains(out.String(), "Protocol 2 spoken by default") {
		t.Errorf("version: exit %d, %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"version", "-format=json"}, &out, &errOut); code != 0 {
		t.Fatalf("version -format=json: exit %d", code)
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["Version"] != version || v["BuildDate"] == "" {
		t.Errorf("version json %q: %+v %v", out.String(), v, err)
	}
	// Consul's keys, and no others: FIPS only when set.
	want := []string{"BuildDate", "Prerelease", "RPC", "Revision", "Version"}
	if got := slices.Sorted(maps.Keys(v)); !slices.Equal(got, want) {
		t.Errorf("version json keys %v, want %v", got, want)
	}
	if rpc, _ := v["RPC"].(map[string]any); rpc["Default"] != 2.0 || rpc["Min"] != 2.0 || rpc["Max"] != 3.0 {
		t.Errorf("version json RPC %v, want 2 in 2..3", v["RPC"])
	}
	for _, flag := range []string{"-v", "-version", "--version"} {
		out.Reset()
		if code := run([]string{flag}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "tenure v"+version+"\n") {
			t.Errorf("tenure %s: exit %d, %q", flag, code, out.String())
		}
	}
	errOut.Reset()
	if code := run([]string{"version", "-format=yaml"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "Invalid format") {
		t.Errorf("bad format: exit %d, %q", code, errOut.String())
	}
}

// TestVCSStamp: the revision and build date come from Go's VCS stamp, and
// a binary without one reports Consul's placeholder date.
func TestVCSStamp(t *testing.T) {
	rev, built := vcsStamp([]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}})
	if rev != "abc123" || !built.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("stamped: %q %v", rev, built)
	}
	for _, settings := range [][]debug.BuildSetting{nil, {{Key: "vcs.time", Value: "yesterday"}}} {
		if rev, built := vcsStamp(settings); rev != "" || !built.Equal(unknownBuildDate) {
			t.Errorf("unstamped %v: %q %v", settings, rev, built)
		}
	}
}

// TestAgentCheckSettings: the script-check switches and
// check_update_interval, from flags and files, with Consul's defaults
// (local script checks follow enable_script_checks unless set; an interval
// of 0 means no deferral), and the warning for remote script checks.
func TestAgentCheckSettings(t *testing.T) {
	s, warnings, err := settingsFrom(t, "-dev")
	if err != nil || s.EnableScriptChecks || s.EnableLocalScriptChecks || len(warnings) != 0 ||
		s.localConfig().CheckUpdateInterval != 5*time.Minute {
		t.Fatalf("defaults: %+v %q %v", s.localConfig(), warnings, err)
	}
	s, warnings, err = settingsFrom(t, "-dev", "-enable-script-checks")
	if err != nil || !s.localConfig().Policy.EnableScriptChecks || !s.localConfig().Policy.EnableLocalScriptChecks ||
		len(warnings) != 1 || !strings.Contains(warnings[0], "DANGEROUS") {
		t.Fatalf("-enable-script-checks: %+v %q %v", s.localConfig().Policy, warnings, err)
	}
	s, _, err = settingsFrom(t, "-dev", "-enable-script-checks", "-enable-local-script-checks=false")
	if err != nil || s.localConfig().Policy.EnableLocalScriptChecks {
		t.Fatalf("explicit local off: %+v %v", s.localConfig().Policy, err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "c.json")
	if err := os.WriteFile(file, []byte(`{"enable_local_script_checks": true, "check_update_interval": "0s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _, err = settingsFrom(t, "-dev", "-config-file", file)
	if err != nil || s.localConfig().Policy.EnableScriptChecks || !s.localConfig().Policy.EnableLocalScriptChecks ||
		s.localConfig().CheckUpdateInterval >= 0 {
		t.Fatalf("from a file: %+v %v", s.localConfig(), err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"check_update_interval": "-1s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := settingsFrom(t, "-dev", "-config-file", bad); err == nil || !strings.Contains(err.Error(), "check_update_interval") {
		t.Fatalf("negative check_update_interval: %v", err)
	}
}

// TestEnableDebugSetting: enable_debug from a file turns on /debug/pprof/,
// as -dev does; a server without it has none, and a non-boolean is refused.
func TestEnableDebugSetting(t *testing.T) {
	dir := t.TempDir()
	on := filepath.Join(dir, "on.hcl")
	if err := os.WriteFile(on, []byte("enable_debug = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, warnings, err := settingsFrom(t, "-server", "-data-dir", dir, "-config-file", on)
	if err != nil || !s.EnableDebug || len(warnings) != 0 {
		t.Fatalf("enable_debug = true: %v %q %v", s.EnableDebug, warnings, err)
	}
	s, _, err = settingsFrom(t, "-server", "-data-dir", dir)
	if err != nil || s.EnableDebug {
		t.Fatalf("default: %v %v", s.EnableDebug, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"enable_debug": "yes"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := settingsFrom(t, "-server", "-data-dir", dir, "-config-file", bad); err == nil || !strings.Contains(err.Error(), "enable_debug") {
		t.Fatalf("enable_debug = \"yes\": %v", err)
	}
}

// TestLeaveOnSignal: whether an agent leaves gracefully on SIGTERM and
// SIGINT follows Consul's defaults for its role and its
// leave_on_terminate and skip_leave_on_interrupt.
func TestLeaveOnSignal(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name          string
		s             settings
		onTerm, onInt bool
	}{
		{"client", settings{}, true, true},
		{"server", settings{Server: true}, false, false},
		{"dev", settings{Dev: true}, false, false},
		{"server leave_on_terminate", settings{Server: true, LeaveOnTerm: &yes}, true, false},
		{"server skip_leave_on_interrupt false", settings{Server: true, SkipLeaveOnInt: &no}, false, true},
		{"client leave_on_terminate false", settings{LeaveOnTerm: &no}, false, true},
		{"client skip_leave_on_interrupt", settings{SkipLeaveOnInt: &yes}, true, false},
	} {
		if got := tc.s.leaveOnSignal(syscall.SIGTERM); got != tc.onTerm {
			t.Errorf("%s: leaves on SIGTERM %v, want %v", tc.name, got, tc.onTerm)
		}
		if got := tc.s.leaveOnSignal(os.Interrupt); got != tc.onInt {
			t.Errorf("%s: leaves on SIGINT %v, want %v", tc.name, got, tc.onInt)
		}
	}
}
