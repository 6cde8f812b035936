package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidate runs `tenure validate` over the cases Consul's `consul
// validate` distinguishes, each with the exit code and the message Consul
// gives (read off a Consul 1.22.7 binary).
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"data_dir": "/var/lib/tenure", "experiments": [], "start_join": ["10.0.0.1"]}`)
	empty := write("empty.json", "")
	bad := write("bad.json", `{"data_dir": "/x", "log_sublevels": {"a": "b"}}`)
	noDataDir := write("nodatadir.hcl", `log_level = "info"`)
	txt := write("conf/b.txt", `data_dir = "/x"`)
	write("conf/a.hcl", `data_dir = "/x"`)

	for _, c := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // stderr "-": it must be empty
	}{
		{"valid with warnings", []string{good}, 0, "Configuration is valid!", "The 'start_join' field is deprecated"},
		{"quiet says nothing", []string{"-quiet", good}, 0, "", "-"},
		{"an empty file sets nothing", []string{good, empty}, 0, "Configuration is valid!", ""},
		{"a key Consul refuses", []string{bad}, 1, "", "Config validation failed: failed to parse " + bad + ": invalid config key log_sublevels"},
		{"what the agent needs is checked", []string{noDataDir}, 1, "", "Config validation failed: data_dir cannot be empty"},
		{"a file's extension must be known", []string{txt}, 1, "", "has unknown extension; must be .hcl or .json"},
		{"unless the format is given", []string{"-config-format", "hcl", txt}, 0, "Configuration is valid!", ""},
		{"a directory skips other files", []string{filepath.Join(dir, "conf")}, 0, "Configuration is valid!", "skipping file " + txt},
		{"a missing path", []string{filepath.Join(dir, "none.json")}, 1, "", "Config validation failed: config: Open failed on"},
		{"no path", nil, 1, "", "Must specify at least one config file or directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"validate"}, c.args...), &stdout, &stderr)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, c.code, stdout.String(), stderr.String())
			}
			if got := strings.TrimSpace(stdout.String()); got != c.stdout {
				t.Errorf("stdout %q, want %q", got, c.stdout)
			}
			if c.stderr == "-" { // nothing at all
				if stderr.Len() > 0 {
					t.Errorf("stderr %q, want nothing", stderr.String())
				}
			} else if !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), c.stderr)
			}
		})
	}
}

// TestConfigPathsInOrder: -config-file and -config-dir are read in the
// order given, later ones winning, as Consul keeps both in one list; the
// old order (every directory before every file) gets this case wrong.
func TestConfigPathsInOrder(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "conf.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "first.json")
	for p, text := range map[string]string{
		file:                             `{"data_dir": "/d", "node_name": "from-file"}`,
		filepath.Join(confDir, "a.hcl"):  `node_name = "from-dir-a"`,
		filepath.Join(confDir, "b.json"): `{"node_name": "from-dir-b"}`,
	} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, _, err := settingsFrom(t, "-config-file", file, "-config-dir", confDir)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeName != "from-dir-b" {
		t.Errorf("node name %q, want the directory's last file to win (from-dir-b)", s.NodeName)
	}
	s, _, err = settingsFrom(t, "-config-dir", confDir, "-config-file", file)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeName != "from-file" {
		t.Errorf("node name %q, want the file given last to win", s.NodeName)
	}
}
