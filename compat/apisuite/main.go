// Command apisuite runs consul/api's own test suite, unmodified, against
// tenure and, with -consul, against a real Consul, and prints passed,
// failed and skipped tests per group (Lock, Semaphore, Session, KV, Txn,
// Agent, Catalog, Health, PreparedQuery, Status, ACL, Coordinate) side by
// side.
//
// The api module's tests start their server through
// github.com/hashicorp/consul/sdk/testutil, which runs `consul agent
// -config-file <json>` from PATH. apisuite therefore:
//
//  1. takes the consul/api version tenure's go.mod requires and gets that
//     module from the Go module cache or proxy (go mod download), then
//     copies its top-level files (sources and _test.go files) into a
//     temporary directory: the tests are HashiCorp's and are never
//     committed here;
//  2. builds tenure (./cmd/tenure) and the shim (./compat/apisuite/consulshim)
//     as `consul` into the same temporary directory;
//  3. compiles the tests once (go test -c) and runs each test in a process
//     of its own through test2json, -parallel at a time, with the shim
//     first on PATH, APISUITE_AGENT naming the agent it must run, and
//     TMPDIR inside the temporary directory, so the harness's data dirs go
//     there too (testutil picks free ports itself);
//  4. prints a table per group, the failing tests with the first failure
//     message of each, the tests not run and why, and where the logs are.
//
// A group is a test file of the module (the KV group is kv_test.go, whose
// tests are named TestAPI_Client…; the Txn group txn_test.go). Tests named
// in excluded.txt need a subsystem tenure does not have and are not run;
// tests whose body starts no agent (client-side unit tests in the same
// files) are not run either, since they say nothing about the server. Both
// are printed with their names.
//
// The shim's workarounds (-workarounds, -consul-workarounds) are described
// in consulshim's doc; by default both get only "connect" (Connect off):
// tenure now accepts the config's version key and honours bootstrap, so
// the other two are kept only to compare with older builds. -workarounds
// none runs tenure on the harness's config as written.
//
//	go run ./compat/apisuite [-consul /path/to/consul] [-groups Lock,KV] [-run REGEX]
//
// Test failures are the report, not an error: the exit status is 0 unless
// the suite could not be set up or run. Run it from the module root.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// apiModule is the module whose tests run.
const apiModule = "github.com/hashicorp/consul/api"

// group is one test file of the api module.
type group struct {
	name, file string
}

var groups = []group{
	{"Lock", "lock_test.go"},
	{"Semaphore", "semaphore_test.go"},
	{"Session", "session_test.go"},
	{"KV", "kv_test.go"},
	{"Txn", "txn_test.go"},
	{"Agent", "agent_test.go"},
	{"Catalog", "catalog_test.go"},
	{"Health", "health_test.go"},
	{"PreparedQuery", "prepared_query_test.go"},
	{"Status", "status_test.go"},
	{"Coordinate", "coordinate_test.go"},
	{"ACL", "acl_test.go"},
}

//go:embed excluded.txt
var excludedList string

type options struct {
	consul            string
	workarounds       string
	consulWorkarounds string
	groups            string
	run               string
	parallel          int
	timeout           time.Duration
	out               string
}

func main() {
	var o options
	flag.StringVar(&o.consul, "consul", "", "a consul binary to run the same tests against, side by side")
	flag.StringVar(&o.workarounds, "workarounds", "connect", "the shim's config workarounds for tenure (comma-separated, or none)")
	flag.StringVar(&o.consulWorkarounds, "consul-workarounds", "connect", "the shim's config workarounds for Consul (comma-separated, or none)")
	flag.StringVar(&o.groups, "groups", "", "run only these groups (comma-separated; default all)")
	flag.StringVar(&o.run, "run", "", "run only the tests whose names match this regular expression")
	flag.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "tests run at once, each in its own process with its own agent")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "limit for one test (its -test.timeout)")
	flag.StringVar(&o.out, "out", "bin/api-suite", "folder for the raw go test -json output of each run")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "apisuite: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if o.parallel < 1 || o.timeout <= 0 {
		fmt.Fprintln(os.Stderr, "apisuite: -parallel must be at least 1 and -timeout positive")
		os.Exit(2)
	}
	// A Ctrl-C reaches go test, the tests' agents and the shims through
	// the terminal; apisuite outlives them to remove its temporary files.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt)
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "apisuite:", err)
		os.Exit(1)
	}
	select {
	case <-interrupted:
		os.Exit(130)
	default:
	}
}

// suiteTest is one test function of a group.
type suiteTest struct {
	name, group string
	// startsAgent: its body starts a server through the harness.
	startsAgent bool
}

// exclusion is one line of excluded.txt.
type exclusion struct {
	test, reason string
}

// target is one agent the suite runs against.
type target struct {
	label, binary, workarounds string
}

func run(o options, stdout, stderr io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	selected, err := selectGroups(o.groups)
	if err != nil {
		return err
	}
	var runRE *regexp.Regexp
	if o.run != "" {
		if runRE, err = regexp.Compile(o.run); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	for _, w := range []string{o.workarounds, o.consulWorkarounds} {
		if err := checkWorkarounds(w); err != nil {
			return err
		}
	}
	excluded, err := parseExcluded(excludedList)
	if err != nil {
		return fmt.Errorf("excluded.txt: %w", err)
	}
	var consulPath string
	if o.consul != "" {
		if consulPath, err = filepath.Abs(o.consul); err != nil {
			return fmt.Errorf("-consul: %w", err)
		}
		if info, err := os.Stat(consulPath); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return fmt.Errorf("-consul %s is not an executable file", o.consul)
		}
	}

	version, srcDir, err := apiModuleSource(root)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "apisuite-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(work)
	apiDir := filepath.Join(work, "api")
	if err := copyTopLevel(srcDir, apiDir); err != nil {
		return fmt.Errorf("copy %s@%s: %w", apiModule, version, err)
	}
	all, err := discoverTests(apiDir)
	if err != nil {
		return fmt.Errorf("%s@%s: %w", apiModule, version, err)
	}
	if err := checkExcluded(excluded, all); err != nil {
		return fmt.Errorf("excluded.txt against %s@%s: %w", apiModule, version, err)
	}
	excludedSet := map[string]string{}
	for _, e := range excluded {
		excludedSet[e.test] = e.reason
	}
	var toRun, clientOnly []suiteTest
	var notRun []exclusion
	for _, t := range all {
		if !slices.Contains(selected, t.group) || (runRE != nil && !runRE.MatchString(t.name)) {
			continue
		}
		switch reason, ok := excludedSet[t.name]; {
		case ok:
			notRun = append(notRun, exclusion{t.name, reason})
		case !t.startsAgent:
			clientOnly = append(clientOnly, t)
		default:
			toRun = append(toRun, t)
		}
	}
	if len(toRun) == 0 {
		return errors.New("no test left to run: check -groups and -run")
	}

	fmt.Fprintf(stderr, "apisuite: %s@%s, %d tests to run per agent; building tenure and the shim\n", apiModule, version, len(toRun))
	binDir := filepath.Join(work, "bin")
	shimDir := filepath.Join(work, "shim")
	tenure := filepath.Join(binDir, "tenure")
	// -buildvcs=auto stamps the revision /v1/agent/self reports even where
	// GOFLAGS turns stamping off; outside a git checkout it stamps nothing.
	if err := goCmd(root, nil, "build", "-buildvcs=auto", "-o", tenure, "./cmd/tenure"); err != nil {
		return fmt.Errorf("build tenure: %w", err)
	}
	if err := goCmd(root, nil, "build", "-o", filepath.Join(shimDir, "consul"), "./compat/apisuite/consulshim"); err != nil {
		return fmt.Errorf("build the consul shim: %w", err)
	}
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	env := suiteEnv(shimDir, tmp)
	fmt.Fprintf(stderr, "apisuite: compiling %s@%s's tests (the first time downloads their dependencies)\n", apiModule, version)
	testBin := filepath.Join(work, "api.test")
	if err := goCmd(apiDir, env, "test", "-c", "-vet=off", "-o", testBin, "."); err != nil {
		return fmt.Errorf("compile %s@%s's tests: %w", apiModule, version, err)
	}

	targets := []target{{"tenure", tenure, o.workarounds}}
	if consulPath != "" {
		targets = append(targets, target{"consul", consulPath, o.consulWorkarounds})
	}
	outDir := o.out
	if !filepath.IsAbs(outDir) {
		outDir = filepath.Join(root, outDir)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	results := map[string]map[string]result{}
	var logs []string
	for _, tg := range targets {
		fmt.Fprintf(stderr, "apisuite: running against %s (%s), workarounds %q, %d at a time\n", tg.label, tg.binary, tg.workarounds, o.parallel)
		logPath := filepath.Join(outDir, tg.label+".jsonl")
		start := time.Now()
		res, err := runSuite(testBin, env, tg, toRun, o, logPath)
		if err != nil {
			return fmt.Errorf("%s: %w", tg.label, err)
		}
		fmt.Fprintf(stderr, "apisuite: %s done in %s\n", tg.label, time.Since(start).Round(time.Second))
		results[tg.label] = res
		logs = append(logs, logPath)
	}
	report(stdout, reportInput{
		version: version, targets: targets, toRun: toRun, clientOnly: clientOnly,
		excluded: notRun, all: all, results: results, logs: logs,
	})
	return nil
}

// shimWorkarounds are the names consulshim knows (its knownWorkarounds):
// checked here too, so a typo fails at once rather than in every test.
var shimWorkarounds = []string{"version", "bootstrap", "connect"}

func checkWorkarounds(list string) error {
	if list == "" || list == "none" {
		return nil
	}
	for w := range strings.SplitSeq(list, ",") {
		if !slices.Contains(shimWorkarounds, strings.TrimSpace(w)) {
			return fmt.Errorf("unknown workaround %q (known: %s, or none)", w, strings.Join(shimWorkarounds, ", "))
		}
	}
	return nil
}

// moduleRoot is the directory of tenure's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run from within the tenure module (go env GOMOD is empty)")
	}
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("read go.mod: %w", err)
	}
	if !bytes.Contains(data, []byte("module github.com/tenurekv/tenure\n")) {
		return "", fmt.Errorf("%s is not tenure's go.mod: run from within the tenure module", gomod)
	}
	return filepath.Dir(gomod), nil
}

func selectGroups(list string) ([]string, error) {
	var names []string
	for _, g := range groups {
		names = append(names, g.name)
	}
	if list == "" {
		return names, nil
	}
	var out []string
	for g := range strings.SplitSeq(list, ",") {
		g = strings.TrimSpace(g)
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, g) })
		if i < 0 {
			return nil, fmt.Errorf("-groups: unknown group %q (groups: %s)", g, strings.Join(names, ", "))
		}
		out = append(out, names[i])
	}
	return out, nil
}

// parseExcluded reads "TestName reason…" lines; # starts a comment line.
func parseExcluded(text string) ([]exclusion, error) {
	var out []exclusion
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := strings.Fields(line)[0]
		reason := strings.TrimSpace(line[len(name):])
		if !strings.HasPrefix(name, "Test") || reason == "" {
			return nil, fmt.Errorf("line %d: want a test name and a reason, got %q", i+1, line)
		}
		if seen[name] {
			return nil, fmt.Errorf("line %d: %s is listed twice", i+1, name)
		}
		seen[name] = true
		out = append(out, exclusion{name, reason})
	}
	return out, nil
}

func checkExcluded(excluded []exclusion, all []suiteTest) error {
	var stale []string
	for _, e := range excluded {
		if !slices.ContainsFunc(all, func(t suiteTest) bool { return t.name == e.test }) {
			stale = append(stale, e.test)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("not a test of any group: %s", strings.Join(stale, ", "))
	}
	return nil
}

// apiModuleSource is the version of consul/api that go.mod selects and the
// module's directory in the module cache (downloaded if need be).
func apiModuleSource(root string) (version, dir string, err error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", apiModule)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go list -m %s: %w", apiModule, withStderr(err))
	}
	version = strings.TrimSpace(string(out))
	cmd = exec.Command("go", "mod", "download", "-json", apiModule+"@"+version)
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go mod download %s@%s: %w", apiModule, version, withStderr(err))
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("go mod download %s@%s: %w", apiModule, version, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", "", fmt.Errorf("go mod download %s@%s: %s", apiModule, version, m.Error)
	}
	return version, m.Dir, nil
}

// withStderr adds a failed command's stderr to its error.
func withStderr(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
	}
	return err
}

// copyTopLevel copies the regular files directly in src (the api package,
// its tests, go.mod and go.sum; not the watch package) into dst, writable,
// since the module cache's files are read-only.
func copyTopLevel(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

var (
	testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\) \{$`)
	// startsServer: the api tests start their agent through one of these.
	startsServer = regexp.MustCompile(`\bmake\w*Client\w*\(|\btestutil\.NewTestServer`)
)

// discoverTests lists each group file's test functions, in file order.
func discoverTests(apiDir string) ([]suiteTest, error) {
	var out []suiteTest
	for _, g := range groups {
		data, err := os.ReadFile(filepath.Join(apiDir, g.file))
		if err != nil {
			return nil, fmt.Errorf("group %s: %w (update the group table in compat/apisuite)", g.name, err)
		}
		src := string(data)
		locs := testFunc.FindAllStringSubmatchIndex(src, -1)
		if len(locs) == 0 {
			return nil, fmt.Errorf("group %s: no tests in %s", g.name, g.file)
		}
		for _, loc := range locs {
			body := src[loc[1]:]
			if end := strings.Index(body, "\n}\n"); end >= 0 {
				body = body[:end]
			}
			out = append(out, suiteTest{
				name:        src[loc[2]:loc[3]],
				group:       g.name,
				startsAgent: startsServer.MatchString(body),
			})
		}
	}
	return out, nil
}

// suiteEnv is the tests' environment: the shim first on PATH, temporary
// files in our directory, no CONSUL_* settings of the caller's (consul/api's
// DefaultConfig would read them), and the agents' logs printed only for
// failed tests (testutil prints every test's under -v, which -json implies).
func suiteEnv(shimDir, tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CONSUL_") || k == "PATH" || k == "TMPDIR" || k == "GOWORK" ||
			k == "TEST_LOGGING_ONLY_FAILED" || k == "NOLOGBUFFER" || k == "TEST_TMP_DIR" || k == "TEST_NODE_ID" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+shimDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TMPDIR="+tmp,
		"GOWORK=off",
		"CHECKPOINT_DISABLE=1",
		"TEST_LOGGING_ONLY_FAILED=1",
	)
}

// goCmd runs the go command in dir, with env if given, and returns its
// output in the error when it fails.
func goCmd(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// result is one test's outcome against one agent.
type result struct {
	action  string // pass, fail, skip; "" when the test never ended
	output  []string
	elapsed float64
}

// testEvent is a line of go test -json.
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// runSuite runs the selected tests against one agent, each in a process of
// its own (o.parallel at a time), and reads their outcomes from test2json,
// whose output it also writes to logPath. One process per test, because a
// test that panics ends its process: TestAPI_CatalogNode's own failure
// message dereferences a missing service when the Proxy field differs, and
// in one shared process that took every test still running down with it.
func runSuite(testBin string, env []string, tg target, tests []suiteTest, o options, logPath string) (map[string]result, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	defer logFile.Close()
	env = append(slices.Clone(env), "APISUITE_AGENT="+tg.binary, "APISUITE_WORKAROUNDS="+tg.workarounds)
	var (
		mu       sync.Mutex
		res      = map[string]result{}
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan suiteTest)
	for range o.parallel {
		wg.Go(func() {
			for t := range next {
				r, raw, err := runOne(testBin, env, t.name, o.timeout)
				mu.Lock()
				if _, werr := logFile.Write(raw); werr != nil && firstErr == nil {
					firstErr = fmt.Errorf("log: %w", werr)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				res[t.name] = r
				mu.Unlock()
			}
		})
	}
	for _, t := range tests {
		next <- t
	}
	close(next)
	wg.Wait()
	return res, firstErr
}

// runOne runs one test through test2json and returns its outcome and the
// raw JSON lines.
func runOne(testBin string, env []string, name string, timeout time.Duration) (result, []byte, error) {
	cmd := exec.Command("go", "tool", "test2json", "-t", "-p", apiModule,
		testBin, "-test.v=test2json", "-test.count=1", "-test.run", "^"+regexp.QuoteMeta(name)+"$",
		"-test.timeout", timeout.String())
	cmd.Dir = filepath.Dir(testBin)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A failing test exits non-zero: that is the report, not an error.
	out, _ := cmd.Output()
	var r result
	var stray []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	events := 0
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			stray = append(stray, sc.Text())
			continue
		}
		events++
		top, _, sub := strings.Cut(ev.Test, "/")
		switch {
		case ev.Action == "output" && (top == name || ev.Test == ""):
			r.output = append(r.output, strings.TrimRight(ev.Output, "\n"))
		case (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") && top == name && !sub:
			r.action, r.elapsed = ev.Action, ev.Elapsed
		}
	}
	if events == 0 {
		return r, out, fmt.Errorf("%s: test2json produced no events: %s %s", name, strings.TrimSpace(stderr.String()), strings.Join(stray, " "))
	}
	if r.action == "" {
		r.action = "fail"
		r.output = append(r.output, "apisuite: no result: the test's process ended before the test did (see the log): "+lastLines(r.output, 3))
	}
	return r, out, nil
}

func lastLines(lines []string, n int) string {
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

var (
	// fileLine is the t.Log/t.Error prefix go test puts on a message.
	fileLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: ?(.*)$`)
	// innerFileLine is the prefix retry adds to the messages it collects.
	innerFileLine = regexp.MustCompile(`^[\w.-]+\.go:\d+: ?`)
	// testifyError is testify's "Error:" line under an empty message.
	testifyError = regexp.MustCompile(`^\s+Error:\s+(.*)$`)
	// testifyMessages is the line with the assertion's msgAndArgs.
	testifyMessages = regexp.MustCompile(`^\s+Messages:\s+(.*)$`)
	// testFrame is a panic's stack frame in one of the api's test files.
	testFrame = regexp.MustCompile(`/api/(\w+_test\.go:\d+)`)
)

// chatter are the harness's log messages, not failures.
var chatter = []string{"CONFIG JSON", "test cmd args", "server stop failed", "WARNING:"}

// failureReason is a one-line reason from a failed test's output: its first
// failure message that is not the harness's own logging; for a server that
// did not start, the agent's or the shim's error; for a panic, the panic
// and the line of the test that made it.
func failureReason(out []string) string {
	for i, line := range out {
		if strings.HasPrefix(line, "apisuite: ") {
			return line
		}
		m := fileLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		msg := strings.TrimSpace(m[1])
		for innerFileLine.MatchString(msg) {
			msg = strings.TrimSpace(innerFileLine.ReplaceAllString(msg, ""))
		}
		if slices.ContainsFunc(chatter, func(c string) bool { return strings.HasPrefix(msg, c) }) {
			continue
		}
		if msg == "" || strings.HasPrefix(msg, "Error Trace:") {
			msg = testifyMessage(out[i+1:])
		} else if strings.HasSuffix(msg, ":") && i+1 < len(out) {
			msg += " " + strings.TrimSpace(out[i+1])
		}
		if msg == "" {
			continue
		}
		if strings.Contains(msg, "Failed to start server") {
			if why := startError(out); why != "" {
				msg += " (" + why + ")"
			}
		}
		return clip(msg, 220)
	}
	for i, line := range out {
		if p, ok := strings.CutPrefix(line, "panic: "); ok {
			p = strings.TrimSuffix(p, " [recovered, repanicked]")
			for _, next := range out[i+1:] {
				if f := testFrame.FindStringSubmatch(next); f != nil {
					return clip("panic at "+f[1]+": "+p, 220)
				}
			}
			return clip("panic: "+p, 220)
		}
	}
	return "(no failure message; see the log)"
}

// startError is the first error an agent or the shim printed on its way
// out: tenure's "tenure agent: …", Consul's "==> …", or the shim's own.
func startError(out []string) string {
	for _, line := range out {
		switch {
		case strings.HasPrefix(line, "tenure agent: "), strings.HasPrefix(line, "==> "),
			strings.HasPrefix(line, "consulshim: ") && !strings.HasPrefix(line, "consulshim: workarounds"):
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// testifyMessage is the "Error:" line of a testify failure (the lines
// after its empty t.Error message), with the line after it when the error
// text itself starts there, and its "Messages:" line.
func testifyMessage(out []string) string {
	for j, line := range out[:min(len(out), 12)] {
		e := testifyError.FindStringSubmatch(line)
		if e == nil {
			continue
		}
		msg := strings.TrimSpace(e[1])
		if (msg == "" || strings.HasSuffix(msg, ":")) && j+1 < len(out) {
			msg += " " + strings.TrimSpace(out[j+1])
		}
		// The assertion's own message, when it gave one, says what was
		// being checked.
		for _, after := range out[j+1 : min(len(out), j+8)] {
			if m := testifyMessages.FindStringSubmatch(after); m != nil {
				msg += " (" + strings.TrimSpace(m[1]) + ")"
				break
			}
		}
		return msg
	}
	return ""
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

type reportInput struct {
	version    string
	targets    []target
	toRun      []suiteTest
	clientOnly []suiteTest
	excluded   []exclusion
	all        []suiteTest
	results    map[string]map[string]result
	logs       []string
}

// report prints the table, the failures, and what was not run.
func report(w io.Writer, in reportInput) {
	groupOf := map[string]string{}
	for _, t := range in.all {
		groupOf[t.name] = t.group
	}
	fmt.Fprintf(w, "\nconsul/api %s: its own tests through the consul shim (compat/apisuite)\n", in.version)
	for _, tg := range in.targets {
		fmt.Fprintf(w, "  %-6s %s, shim workarounds: %s\n", tg.label, tg.binary, orNone(tg.workarounds))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "group\trun\texcluded\tno agent\t"
	for _, tg := range in.targets {
		header += "|\t" + tg.label + " passed\tfailed\tskipped\t"
	}
	fmt.Fprintln(tw, header)
	type counts struct{ run, excl, client int }
	var totals counts
	totalRes := map[string][3]int{}
	for _, g := range groups {
		var c counts
		for _, t := range in.toRun {
			if t.group == g.name {
				c.run++
			}
		}
		for _, e := range in.excluded {
			if groupOf[e.test] == g.name {
				c.excl++
			}
		}
		for _, t := range in.clientOnly {
			if t.group == g.name {
				c.client++
			}
		}
		if c.run+c.excl+c.client == 0 {
			continue
		}
		totals.run += c.run
		totals.excl += c.excl
		totals.client += c.client
		line := fmt.Sprintf("%s\t%d\t%d\t%d\t", g.name, c.run, c.excl, c.client)
		for _, tg := range in.targets {
			var pfs [3]int
			for _, t := range in.toRun {
				if t.group != g.name {
					continue
				}
				switch in.results[tg.label][t.name].action {
				case "pass":
					pfs[0]++
				case "fail":
					pfs[1]++
				case "skip":
					pfs[2]++
				}
			}
			tot := totalRes[tg.label]
			for i := range pfs {
				tot[i] += pfs[i]
			}
			totalRes[tg.label] = tot
			line += fmt.Sprintf("|\t%d\t%d\t%d\t", pfs[0], pfs[1], pfs[2])
		}
		fmt.Fprintln(tw, line)
	}
	line := fmt.Sprintf("total\t%d\t%d\t%d\t", totals.run, totals.excl, totals.client)
	for _, tg := range in.targets {
		t := totalRes[tg.label]
		line += fmt.Sprintf("|\t%d\t%d\t%d\t", t[0], t[1], t[2])
	}
	fmt.Fprintln(tw, line)
	_ = tw.Flush()

	for _, tg := range in.targets {
		var failed []suiteTest
		for _, t := range in.toRun {
			if in.results[tg.label][t.name].action == "fail" {
				failed = append(failed, t)
			}
		}
		fmt.Fprintf(w, "\n%s: %d failed\n", tg.label, len(failed))
		for _, t := range failed {
			r := in.results[tg.label][t.name]
			fmt.Fprintf(w, "  %-13s %s (%.1fs): %s\n", t.group, t.name, r.elapsed, failureReason(r.output))
		}
		for _, t := range in.toRun {
			if r := in.results[tg.label][t.name]; r.action == "skip" {
				fmt.Fprintf(w, "  %-13s %s skipped: %s\n", t.group, t.name, skipReason(r.output))
			}
		}
	}
	if len(in.excluded) > 0 {
		fmt.Fprintf(w, "\nexcluded, not run (compat/apisuite/excluded.txt): %d\n", len(in.excluded))
		for _, e := range in.excluded {
			fmt.Fprintf(w, "  %-13s %s: %s\n", groupOf[e.test], e.test, e.reason)
		}
	}
	if len(in.clientOnly) > 0 {
		fmt.Fprintf(w, "\nno agent, not run (client-side tests that start no server): %d\n", len(in.clientOnly))
		for _, t := range in.clientOnly {
			fmt.Fprintf(w, "  %-13s %s\n", t.group, t.name)
		}
	}
	fmt.Fprintf(w, "\ngo test -json output (agents' logs for failed tests): %s\n", strings.Join(in.logs, ", "))
}

// skipReason is the message of a skipped test's t.Skip.
func skipReason(out []string) string {
	for _, line := range out {
		if m := fileLine.FindStringSubmatch(line); m != nil && strings.TrimSpace(m[1]) != "" {
			return clip(m[1], 200)
		}
	}
	return "(no message)"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
