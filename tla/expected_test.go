package tla

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadExpectedRejects(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"not json":         `{`,
		"no configs":       `{"configs": []}`,
		"no name":          `{"configs": [{"result": "ok", "exit_code": 0, "distinct_states": 1}]}`,
		"no states":        `{"configs": [{"config": "a.cfg", "result": "ok", "exit_code": 0, "distinct_states": 0}]}`,
		"ok with exit 12":  `{"configs": [{"config": "a.cfg", "result": "ok", "exit_code": 12, "distinct_states": 1}]}`,
		"violation no inv": `{"configs": [{"config": "a.cfg", "result": "violation", "exit_code": 12, "distinct_states": 1, "trace": "t.json", "trace_states": 2}]}`,
		"unknown result":   `{"configs": [{"config": "a.cfg", "result": "maybe", "exit_code": 0, "distinct_states": 1}]}`,
		"unknown measurer": `{"configs": [{"config": "a.cfg", "result": "ok", "exit_code": 0, "distinct_states": 1, "measured_by": "guess"}]}`,
	} {
		path := filepath.Join(dir, "expected.json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readExpected(path); err == nil {
			t.Errorf("%s: readExpected accepted %s", name, text)
		}
	}
	if _, err := readExpected(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("readExpected of a missing file succeeded")
	}
}
