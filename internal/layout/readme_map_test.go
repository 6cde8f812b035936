package layout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository, two levels above this package.
const root = "../.."

// TestReadmeMapMatchesPackages: every directory with Go files is named in
// the first column of README.md's "## Map" table, and every directory the
// map names exists.
func TestReadmeMapMatchesPackages(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	named, err := mapPaths(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := goPackageDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	missing, stale := compare(named, pkgs, func(p string) bool {
		_, err := os.Stat(filepath.Join(root, p))
		return err == nil
	})
	for _, p := range missing {
		t.Errorf("package %s is not in README.md's map", p)
	}
	for _, p := range stale {
		t.Errorf("README.md's map names %s, which does not exist", p)
	}
}

// TestMapCheckCatchesDrift: a package missing from the map, and a mapped
// path that is gone, are both reported.
func TestMapCheckCatchesDrift(t *testing.T) {
	readme := "intro\n## Map\n\n| path | what |\n|---|---|\n| `model/` | m |\n| `impl/gone`, `DESIGN.md` | x |\n\nOther:\n\n| `make x` | not the map |\n## Next\n| `sim/` | not the map |\n"
	named, err := mapPaths(readme)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"DESIGN.md", "impl/gone", "model"}; !slices.Equal(named, want) {
		t.Fatalf("map paths %v, want %v", named, want)
	}
	exists := func(p string) bool { return p != "impl/gone" }
	missing, stale := compare(named, []string{"model", "sim"}, exists)
	if !slices.Equal(missing, []string{"sim"}) || !slices.Equal(stale, []string{"impl/gone"}) {
		t.Errorf("missing %v, stale %v; want [sim] and [impl/gone]", missing, stale)
	}
	if _, err := mapPaths("no map here"); err == nil {
		t.Error("a README without a map was accepted")
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// mapPaths are the backticked paths in the first column of the first table
// under "## Map", without trailing slashes, sorted.
func mapPaths(readme string) ([]string, error) {
	_, after, ok := strings.Cut(readme, "\n## Map\n")
	if !ok {
		return nil, errNoMap
	}
	var out []string
	inTable := false
	for line := range strings.SplitSeq(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the map is the first table of the section
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, strings.TrimSuffix(m[1], "/"))
		}
	}
	slices.Sort(out)
	return out, nil
}

var errNoMap = errors.New(`README.md has no "## Map" section`)

// goPackageDirs are the directories under dir holding .go files, relative
// to dir; testdata and hidden directories are not packages.
func goPackageDirs(dir string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != dir && (name == "testdata" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() && path != dir {
			// A module of its own (a patched dependency) is one entry.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				rel, err := filepath.Rel(dir, path)
				if err != nil {
					return err
				}
				seen[filepath.ToSlash(rel)] = true
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(dir, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, err
}

// compare returns the packages the map does not name and the named paths
// that do not exist.
func compare(named, pkgs []string, exists func(string) bool) (missing, stale []string) {
	for _, p := range pkgs {
		if !slices.Contains(named, p) {
			missing = append(missing, p)
		}
	}
	for _, p := range named {
		if !exists(p) {
			stale = append(stale, p)
		}
	}
	return missing, stale
}
