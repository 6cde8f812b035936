package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Citations of Consul's behaviour must resolve inside the repository:
// "CONSUL.md §N" names a section heading of spec/CONSUL.md, and nothing
// cites a notes file outside the tree. The forbidden forms are built from
// parts so that this file does not match itself.
var (
	consulCite   = regexp.MustCompile(`CONSUL\.md §([0-9A-Z]+)`)
	consulAnchor = regexp.MustCompile(`(?m)^## §([0-9A-Z]+) `)
	outsideCites = []string{
		"facts " + "§",
		"consul-" + "facts.md",
		"agents-" + "facts.md",
		"/work/" + "shared",
		"../" + "shared/",
	}
	citedExts = []string{".go", ".md", ".tla", ".txt", ".cfg", ".json", ".sh"}
)

// danglingCitations returns one line per citation in files (path to
// contents) that points outside the repository or at a section consulMD
// does not have.
func danglingCitations(files map[string]string, consulMD string) []string {
	anchors := map[string]bool{}
	for _, m := range consulAnchor.FindAllStringSubmatch(consulMD, -1) {
		anchors[m[1]] = true
	}
	var out []string
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	})
	for _, path := range paths {
		for i, line := range strings.Split(files[path], "\n") {
			for _, bad := range outsideCites {
				if strings.Contains(line, bad) {
					out = append(out, fmt.Sprintf("%s:%d: cites %q, which is outside the repository", path, i+1, bad))
				}
			}
			for _, m := range consulCite.FindAllStringSubmatch(line, -1) {
				if !anchors[m[1]] {
					out = append(out, fmt.Sprintf("%s:%d: CONSUL.md has no section §%s", path, i+1, m[1]))
				}
			}
		}
	}
	return out
}

// TestCitationsResolve checks every text file of the repository.
func TestCitationsResolve(t *testing.T) {
	consulMD, err := os.ReadFile("CONSUL.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "artifacts":
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(citedExts, filepath.Ext(path)) || strings.HasSuffix(path, "citations_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[path] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("read only %d files; is the walk rooted at the repository?", len(files))
	}
	for _, d := range danglingCitations(files, string(consulMD)) {
		t.Error(d)
	}
}

// TestDanglingCitationsAreReported shows the checker failing on each kind
// of bad citation, and passing a clean tree.
func TestDanglingCitationsAreReported(t *testing.T) {
	consulMD := "# Consul\n\n## §1 Sessions\n\n## §A1 Agents\n"
	clean := map[string]string{
		"a.go": "// Defaults (CONSUL.md §1), agents (CONSUL.md §A1).\n",
		"b.md": "No citation here.\n",
	}
	if got := danglingCitations(clean, consulMD); len(got) != 0 {
		t.Fatalf("clean tree reported: %v", got)
	}
	for name, file := range map[string]string{
		"missing section":     "// see CONSUL.md §7\n",
		"old notes form":      "// see " + outsideCites[0] + "3\n",
		"notes file by name":  "// from " + outsideCites[1] + "\n",
		"agents notes":        "// from " + outsideCites[2] + "\n",
		"absolute shared dir": "// " + outsideCites[3] + "/x\n",
		"relative shared dir": "// " + outsideCites[4] + "x.md\n",
	} {
		got := danglingCitations(map[string]string{"x.go": file}, consulMD)
		if len(got) != 1 {
			t.Errorf("%s: reported %v, want one line", name, got)
		}
	}
}
