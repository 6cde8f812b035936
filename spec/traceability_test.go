// Package spec holds tenure's contract (SPEC.md); this test keeps SPEC.md's
// traceability table true by resolving every name it cites in code.
package spec

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/spec/conformance"
)

type traceRow struct {
	clause, status string
	cells          map[string]string // column name → cell text
}

func readTable(t *testing.T) []traceRow {
	t.Helper()
	b, err := os.ReadFile("SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "## Traceability")
	if i < 0 {
		t.Fatal("SPEC.md has no Traceability section")
	}
	var header []string
	var rows []traceRow
	for _, line := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "S"):
			r := traceRow{clause: cells[0], status: cells[1], cells: map[string]string{}}
			for j := 2; j < len(cells) && j < len(header); j++ {
				r.cells[header[j]] = cells[j]
			}
			rows = append(rows, r)
		}
	}
	if len(rows) < 50 {
		t.Fatalf("traceability table has %d rows", len(rows))
	}
	return rows
}

// goPackage is what one package directory declares, as the compiler sees
// it: comments and strings never count.
type goPackage struct {
	name  string          // the package clause (an _test suffix dropped)
	decls map[string]bool // Func, Type, Type.Method, Type.Field, Const, Var
}

// parseGoPackage parses every Go file of dir, tests included, since a row
// may cite a test function.
func parseGoPackage(dir string) (goPackage, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return goPackage{}, err
	}
	p := goPackage{decls: map[string]bool{}}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return goPackage{}, fmt.Errorf("parse %s: %w", path, err)
		}
		if name := strings.TrimSuffix(f.Name.Name, "_test"); p.name == "" {
			p.name = name
		} else if name != p.name {
			return goPackage{}, fmt.Errorf("%s: package %s among package %s", path, name, p.name)
		}
		for _, d := range f.Decls {
			addDecl(p.decls, d)
		}
	}
	if p.name == "" {
		return goPackage{}, fmt.Errorf("%s holds no Go files", dir)
	}
	return p, nil
}

func addDecl(decls map[string]bool, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			decls[d.Name.Name] = true
			return
		}
		decls[receiverType(d.Recv.List[0].Type)+"."+d.Name.Name] = true
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				decls[s.Name.Name] = true
				for _, m := range members(s.Type) {
					decls[s.Name.Name+"."+m] = true
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					decls[n.Name] = true
				}
			}
		}
	}
}

// receiverType is a method receiver's type name: *T, T[K] and T all give T.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// members are a struct's fields or an interface's methods.
func members(e ast.Expr) []string {
	var list *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
		if len(f.Names) == 0 { // embedded: its type name is the field name
			if n := receiverType(f.Type); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// goNames resolves `pkg.Name` and `pkg.Type.Member` against the packages
// the table may cite, keyed by package name; each is parsed once.
type goNames struct {
	dirs   map[string]string // package name → directory
	parsed map[string]goPackage
}

func newGoNames(dirs map[string]string) *goNames {
	return &goNames{dirs: dirs, parsed: map[string]goPackage{}}
}

// problem says why name does not resolve, or "" if it does.
func (g *goNames) problem(name string) string {
	pkg, rest, ok := strings.Cut(name, ".")
	if !ok {
		return name + " names no package (write pkg.Name)"
	}
	dir, ok := g.dirs[pkg]
	if !ok {
		return name + ": package " + pkg + " may not be cited in this column"
	}
	p, ok := g.parsed[pkg]
	if !ok {
		var err error
		if p, err = parseGoPackage(dir); err != nil {
			return err.Error()
		}
		if p.name != pkg {
			return fmt.Sprintf("%s: directory %s holds package %s", name, dir, p.name)
		}
		g.parsed[pkg] = p
	}
	if !p.decls[rest] {
		return name + " is not declared in package " + pkg
	}
	return ""
}

var (
	codeName     = regexp.MustCompile("`([^`]+)`")
	scenarioName = regexp.MustCompile(`\b[\w-]+\.txt\b`)
)

// goCellProblems lists what a Model or Impl cell cites that no Go
// declaration of the named package matches. required says whether a
// non-consul clause must fill the cell.
func goCellProblems(names *goNames, scenarioDir, column string, r traceRow, required bool) []string {
	var problems []string
	cell := r.cells[column]
	if required && cell == "" && r.status != "consul" {
		problems = append(problems, "empty "+column+" cell")
	}
	for _, m := range codeName.FindAllStringSubmatch(cell, -1) {
		if p := names.problem(m[1]); p != "" {
			problems = append(problems, column+" cell: "+p)
		}
	}
	for _, f := range scenarioName.FindAllString(cell, -1) {
		if _, err := os.Stat(filepath.Join(scenarioDir, f)); err != nil {
			problems = append(problems, "scenario "+f+" does not exist")
		}
	}
	return problems
}

// listProblems lists the names a cell cites that are not in known.
func listProblems(known map[string]bool, column string, r traceRow) []string {
	var problems []string
	for _, m := range codeName.FindAllStringSubmatch(r.cells[column], -1) {
		if !known[m[1]] {
			problems = append(problems, column+" cell names "+m[1]+", not defined")
		}
	}
	return problems
}

// tlaDefinitions are the operators a TLA+ module defines at the start of a
// line (`Name ==` or `Name(args) ==`); comments and uses do not count.
func tlaDefinitions(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+)(?:\([^)]*\))?\s*==`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// simCheckNames are the values of the string constants named Check… in
// sim/ and below: the names a simulator run reports its checks by.
func simCheckNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Check") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							out[v] = true
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// modelPackages and implPackages map the package names the Model and Impl
// columns may cite to their directories.
var (
	modelPackages = map[string]string{"model": "../model", "acl": "../acl"}
	implPackages  = map[string]string{"server": "../impl/internal/server", "fsm": "../impl/internal/fsm", "leader": "../impl/internal/leader", "httpapi": "../impl/internal/httpapi",
		"agent": "../impl/agent", "reconcile": "../impl/internal/reconcile", "local": "../impl/internal/local",
		"rpc": "../impl/internal/rpc", "gossip": "../impl/internal/gossip", "tlsconf": "../impl/internal/tlsconf", "main": "../cmd/tenure",
		"agentcache": "../impl/internal/agentcache", "catalogwire": "../impl/internal/catalogwire"}
)

// TestTraceabilityNamesExist: every Model and Impl name is a declaration
// (function, method as Type.Method, type, field, constant or test) of the
// package it names, model for Model and server, fsm, leader, httpapi, agent, reconcile, local, rpc,
// gossip, tlsconf, agentcache or main (cmd/tenure) for Impl; every scenario file cited exists; every TLA+ name is an
// operator tla/Sessions.tla defines; every Sim name is a check sim/ reports;
// every conformance name is a case of its clause in the suite's registry.
func TestTraceabilityNamesExist(t *testing.T) {
	modelNames, implNames := newGoNames(modelPackages), newGoNames(implPackages)
	tla := tlaDefinitions(t, "../tla/Sessions.tla")
	sim := simCheckNames(t, "../sim")
	cases := map[string]bool{}
	for _, c := range conformance.Suite() {
		cases[c.ID()] = true
	}
	for _, r := range readTable(t) {
		var problems []string
		problems = append(problems, conformanceProblems(cases, r)...)
		problems = append(problems, goCellProblems(modelNames, "../testdata/model", "Model", r, true)...)
		problems = append(problems, goCellProblems(implNames, "../testdata/model", "Impl", r, false)...)
		problems = append(problems, listProblems(tla, "TLA+", r)...)
		problems = append(problems, listProblems(sim, "Sim", r)...)
		for _, p := range problems {
			t.Errorf("%s: %s", r.clause, p)
		}
	}
}

// conformanceProblems: every clause names at least one case, and each name
// is a case of that clause (case IDs are "<clause>/<name>").
func conformanceProblems(cases map[string]bool, r traceRow) []string {
	names := codeName.FindAllStringSubmatch(r.cells["Conformance"], -1)
	if len(names) == 0 {
		return []string{"no conformance case"}
	}
	var problems []string
	for _, n := range names {
		if !cases[r.clause+"/"+n[1]] {
			problems = append(problems, fmt.Sprintf("conformance case %s/%s does not exist", r.clause, n[1]))
		}
	}
	return problems
}

// fakePackage is a package whose comments still mention an identifier the
// code has renamed, as a rename done in code only would leave it.
const fakePackage = `package fake

// checkEffects was renamed to verifyEffects; this comment still says
// checkEffects, and so does the string below.
func verifyEffects() string { return "checkEffects" }

type Book struct{ Due int }

func (b *Book) Reset() {}

func TestBook(t any) {}
`

// TestTraceabilityCheckerFails: rows citing names that exist only in
// comments or strings, in another package, without a package, or missing
// scenarios, TLA+ operators, sim checks or conformance cases are reported.
func TestTraceabilityCheckerFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake.go"), []byte(fakePackage), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "other.go"), []byte("package other\n\nfunc elsewhere() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := newGoNames(map[string]string{"fake": dir, "other": other, "mislabelled": other})
	row := func(cell string) traceRow {
		return traceRow{clause: "S1", status: "contract", cells: map[string]string{"Model": cell}}
	}
	for _, cell := range []string{
		"`fake.checkEffects`",               // renamed in code, still in comments and a string
		"`other.verifyEffects`",             // exists, but in another package
		"`verifyEffects`",                   // no package named
		"`fake.Book.Clear`",                 // no such method
		"`fake.Reset`",                      // a method cited as a function
		"`mislabelled.elsewhere`",           // the directory holds another package
		"`nosuch.verifyEffects`",            // a package the table may not cite
		"`fake.verifyEffects` (nosuch.txt)", // missing scenario
		"",                                  // contract clause with nothing
	} {
		if len(goCellProblems(names, "../testdata/model", "Model", row(cell), true)) == 0 {
			t.Errorf("bad cell %q passed", cell)
		}
	}
	for _, cell := range []string{"`fake.verifyEffects`", "`fake.Book`, `fake.Book.Reset`, `fake.Book.Due`", "`fake.TestBook`, `other.elsewhere`"} {
		if p := goCellProblems(names, "../testdata/model", "Model", row(cell), true); len(p) != 0 {
			t.Errorf("good cell %q reported: %v", cell, p)
		}
	}
	consul := traceRow{clause: "S9", status: "consul", cells: map[string]string{"Model": ""}}
	if p := goCellProblems(names, "../testdata/model", "Model", consul, true); len(p) != 0 {
		t.Errorf("empty cell of a consul clause reported: %v", p)
	}

	tla := filepath.Join(dir, "M.tla")
	if err := os.WriteFile(tla, []byte("\\* Gone == TRUE was renamed\nKept(x) == x\nUse == Kept(Gone)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defs := tlaDefinitions(t, tla)
	if !defs["Kept"] || !defs["Use"] || defs["Gone"] {
		t.Errorf("TLA+ definitions %v; want Kept and Use, not Gone (comment and use only)", defs)
	}
	simDir := filepath.Join(dir, "sim")
	if err := os.MkdirAll(filepath.Join(simDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	simSrc := "package sim\n\n// \"commented-out\" was a check.\nconst (\n\tCheckA = \"a-check\"\n\tOther = \"not-a-check\"\n)\n"
	if err := os.WriteFile(filepath.Join(simDir, "sub", "c.go"), []byte(simSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	checks := simCheckNames(t, simDir)
	simRow := func(cell string) traceRow { return traceRow{clause: "S1", cells: map[string]string{"Sim": cell}} }
	for _, cell := range []string{"`not-a-check`", "`commented-out`", "`a-check`, `missing`"} {
		if len(listProblems(checks, "Sim", simRow(cell))) == 0 {
			t.Errorf("sim cell %q passed", cell)
		}
	}
	if p := listProblems(checks, "Sim", simRow("`a-check`")); len(p) != 0 {
		t.Errorf("good sim cell reported: %v", p)
	}

	cases := map[string]bool{"S1/real": true}
	for _, cell := range []string{"", "`missing`", "`real`, `missing`"} {
		if len(conformanceProblems(cases, traceRow{clause: "S1", cells: map[string]string{"Conformance": cell}})) == 0 {
			t.Errorf("conformance cell %q passed", cell)
		}
	}
	if len(conformanceProblems(cases, traceRow{clause: "S2", cells: map[string]string{"Conformance": "`real`"}})) == 0 {
		t.Errorf("a case of another clause passed")
	}
}
