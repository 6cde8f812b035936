package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestExcludedListParses: the committed list is well formed, and every
// line names its subsystem before the reason.
func TestExcludedListParses(t *testing.T) {
	ex, err := parseExcluded(excludedList)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) == 0 {
		t.Fatal("excluded.txt lists no test")
	}
	subsystems := []string{"Connect", "ACL", "DNS", "WAN federation"}
	for _, e := range ex {
		if sub, _, ok := strings.Cut(e.reason, ":"); !ok || !slices.Contains(subsystems, sub) {
			t.Errorf("%s: reason %q does not start with a subsystem tenure lacks (%v) and a colon", e.test, e.reason, subsystems)
		}
	}
}

// TestExcludedNamesAreTests: each excluded name is a test of the consul/api
// version go.mod requires, read from the module cache (the module is a
// dependency, so the build has it; no download).
func TestExcludedNamesAreTests(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", apiModule).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("%s is not in the module cache: %v", apiModule, err)
	}
	all, err := discoverTests(dir)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := parseExcluded(excludedList)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkExcluded(ex, all); err != nil {
		t.Error(err)
	}
	// Every group's file has tests that start an agent: the body scan
	// still recognises the harness's helpers.
	byGroup := map[string]int{}
	for _, s := range all {
		if s.startsAgent {
			byGroup[s.group]++
		}
	}
	for _, g := range groups {
		if byGroup[g.name] == 0 {
			t.Errorf("group %s: no test that starts an agent", g.name)
		}
	}
}

func TestParseExcludedRejectsBadLines(t *testing.T) {
	for _, text := range []string{
		"TestA\n",                  // no reason
		"NotATest Connect: x\n",    // not a test name
		"TestA x: y\nTestA x: y\n", // twice
	} {
		if _, err := parseExcluded(text); err == nil {
			t.Errorf("%q was accepted", text)
		}
	}
	ex, err := parseExcluded("# comment\n\nTestA \t Connect: the CA\n")
	if err != nil || len(ex) != 1 || ex[0].test != "TestA" || ex[0].reason != "Connect: the CA" {
		t.Errorf("got %v, %v", ex, err)
	}
	if err := checkExcluded(ex, []suiteTest{{name: "TestB"}}); err == nil {
		t.Error("a stale exclusion was accepted")
	}
}

func TestSelectGroups(t *testing.T) {
	got, err := selectGroups("lock, KV")
	if err != nil || strings.Join(got, ",") != "Lock,KV" {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := selectGroups("Lock,Connect"); err == nil || !strings.Contains(err.Error(), `"Connect"`) {
		t.Errorf("an unknown group gave %v", err)
	}
}

func TestFailureReason(t *testing.T) {
	for _, c := range []struct {
		out  []string
		want string
	}{
		{[]string{
			"=== RUN   TestAPI_X",
			"    api_test.go:120: CONFIG JSON: {}",
			"    kv_test.go:55: bad: got 1",
		}, "bad: got 1"},
		{[]string{
			"    session_test.go:40: ",
			"        \tError Trace:\tsession_test.go:40",
			"        \tError:      \tReceived unexpected error:",
			"        \t            \tUnexpected response code: 500 (boom)",
		}, "Received unexpected error: Unexpected response code: 500 (boom)"},
		{[]string{"apisuite: no result: x"}, "apisuite: no result: x"},
		{[]string{"--- FAIL: TestAPI_X (0.00s)"}, "(no failure message; see the log)"},
	} {
		if got := failureReason(c.out); got != c.want {
			t.Errorf("failureReason(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

func TestFailureReasonDigs(t *testing.T) {
	for _, c := range []struct {
		out  []string
		want string
	}{
		{[]string{
			"    retry.go:219: server.go:342: CONFIG JSON: {}",
			"        server.go:392: server stop failed with: exit status 2",
			"        retry.go:62: Failed to start server: api unavailable",
			"consulshim: workarounds version applied: {}",
			"tenure agent: /tmp/reload.json: unexpected end of JSON input",
		}, "Failed to start server: api unavailable (tenure agent: /tmp/reload.json: unexpected end of JSON input)"},
		{[]string{
			"--- FAIL: TestAPI_AgentJoin (3.18s)",
			"panic: interface conversion: interface {} is nil, not string [recovered, repanicked]",
			"testing.tRunner.func1.2({0xb2c480, 0x10f8e8f51830})",
			"	/tmp/apisuite-1/api/agent_test.go:1408 +0x1b6",
		}, "panic at agent_test.go:1408: interface conversion: interface {} is nil, not string"},
		{[]string{
			"    agent_test.go:1927: ",
			"        \tError Trace:\t/tmp/x/api/agent_test.go:1927",
			"        \tError:      \tExpected value not to be nil.",
			"        \tTest:       \tTestAPI_AgentHealthServiceOpts",
			"        \tMessages:   \tservice id:foo : bad output",
		}, "Expected value not to be nil. (service id:foo : bad output)"},
		{[]string{
			"    retry.go:219: retry.go:62: Bad proxy config:",
			"        want &{a}",
		}, "Bad proxy config: want &{a}"},
	} {
		if got := failureReason(c.out); got != c.want {
			t.Errorf("failureReason(%q)\n = %q\nwant %q", c.out, got, c.want)
		}
	}
}
