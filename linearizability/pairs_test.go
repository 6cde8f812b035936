package linearizability

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// historyCase is one file of testdata/histories: a history and the verdict
// it must get. ExpectPerKey, when set, is the verdict of the per-key check
// where it differs from the exact one (a documented blind spot).
type historyCase struct {
	About        string
	Clauses      []string
	Expect       Verdict
	ExpectPerKey Verdict
	History      History
}

const historiesDir = "../testdata/histories"

func loadCase(t *testing.T, path string) historyCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c historyCase
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestHistoryPairs runs every good/bad pair in both modes and asserts the
// labelled verdicts. Each bad history is rejected; its good twin, which
// differs minimally, is accepted; so every check shown here can fail.
func TestHistoryPairs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]map[string]string{}
	for _, f := range files {
		name, variant, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".json"), ".")
		if !ok || (variant != "good" && variant != "bad") {
			t.Fatalf("%s: want <pair>.good.json or <pair>.bad.json", f)
		}
		if variants[name] == nil {
			variants[name] = map[string]string{}
		}
		variants[name][variant] = f
	}
	if len(variants) < 20 {
		t.Fatalf("found %d pairs in %s, want at least 20", len(variants), historiesDir)
	}
	for name, v := range variants {
		if v["good"] == "" || v["bad"] == "" {
			t.Errorf("pair %s lacks its good or bad history", name)
			continue
		}
		for _, variant := range []string{"good", "bad"} {
			c := loadCase(t, v[variant])
			wantLabel := map[string]Verdict{"good": VerdictOK, "bad": VerdictIllegal}[variant]
			if c.Expect != wantLabel {
				t.Errorf("%s: a %s history must expect %q, labelled %q", v[variant], variant, wantLabel, c.Expect)
			}
			for _, whole := range []bool{false, true} {
				want := c.Expect
				if !whole && c.ExpectPerKey != "" {
					want = c.ExpectPerKey
				}
				mode := map[bool]string{false: "per-key", true: "whole"}[whole]
				t.Run(name+"/"+variant+"/"+mode, func(t *testing.T) {
					dir := t.TempDir()
					rep, err := Check(c.History, Options{Timeout: 10 * time.Second, Whole: whole, ArtifactDir: dir, Name: name})
					if rep.Verdict != want {
						t.Fatalf("%s\nverdict %q, want %q (err %v)", c.About, rep.Verdict, want, err)
					}
					if want == VerdictOK {
						if err != nil {
							t.Fatalf("verdict ok but error %v", err)
						}
						if _, err := os.Stat(filepath.Join(dir, name+".html")); err == nil {
							t.Fatalf("a linearizable history wrote a visualisation without Visualize")
						}
						if _, err := Check(c.History, Options{Timeout: 10 * time.Second, Whole: whole, ArtifactDir: dir, Name: name, Visualize: true}); err != nil {
							t.Fatalf("with Visualize: %v", err)
						}
						if _, err := os.Stat(filepath.Join(dir, name+".html")); err != nil {
							t.Fatalf("Visualize wrote no visualisation: %v", err)
						}
						return
					}
					if !errors.Is(err, ErrIllegal) {
						t.Fatalf("error %v does not wrap ErrIllegal", err)
					}
					if len(rep.Failed) == 0 && len(rep.Violations) == 0 {
						t.Fatalf("illegal without a failed partition or a violation: %+v", rep)
					}
					if _, err := os.Stat(filepath.Join(dir, name+".html")); err != nil {
						t.Fatalf("no visualisation: %v", err)
					}
				})
			}
		}
	}
}
