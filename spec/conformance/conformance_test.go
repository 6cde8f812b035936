package conformance

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"
)

// Flags of `go test ./spec/conformance -addr URL -profile P`. -run is go
// test's own flag, so the case filter is -filter.
var (
	flagAddr     = flag.String("addr", "", "base URL of a Consul-API server to check (default: startDev, else skip)")
	flagToken    = flag.String("token", "", "ACL token for the server")
	flagReapWait = flag.Duration("reap-wait", 0, "how long the server under -addr takes to reap a deletion; 0 skips the S52 case")
	flagProfile  = flag.String("profile", "", "contract, consul, tenure, acl, acl-consul or acl-tenure (default: contract with -addr, tenure with startDev)")
	flagFilter   = flag.String("filter", "", "regexp over case IDs, e.g. 'S2[0-9]/'")
	flagParallel = flag.Int("workers", defaultParallel, "cases run at once")
	flagJSON     = flag.Bool("json", false, "log the report as JSON instead of a table")
	flagAgent    = flag.String("agent", "", "agent binary of the -addr server's kind, for the cases that start gossip members (default with startDev: devAgent)")
)

// TestConformance runs the suite against -addr, or against an in-process
// server from startDev, and reports every case as a subtest.
func TestConformance(t *testing.T) {
	// The suite and the mutant check each mostly wait on timers (TTL,
	// lock-delay); running them side by side halves the package's wall time.
	t.Parallel()
	addr, profile, reapWait := serverUnderTest(t)
	agent := agentUnderTest(t)
	p, err := parseStatus(profile)
	if err != nil {
		t.Fatalf("-profile: %v", err)
	}
	rep := Run(context.Background(), Options{Addr: addr, Token: *flagToken, Profile: p,
		Parallel: *flagParallel, Filter: *flagFilter, SkipSlow: testing.Short(), ReapWait: reapWait, Agent: agent})
	var b strings.Builder
	if *flagJSON {
		err = rep.WriteJSON(&b)
	} else {
		err = rep.WriteTable(&b)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if rep.Error != "" {
		t.Errorf("run error: %s", rep.Error)
	}
	for _, c := range rep.Cases {
		t.Run(c.ID, func(t *testing.T) {
			switch c.Outcome {
			case Fail:
				t.Errorf("%s", c.Reason)
			case Skip:
				t.Skip(c.Reason)
			}
		})
	}
}

// agentUnderTest is -agent, else devAgent's binary for a startDev server
// when slow cases run (every case that starts agents is slow).
func agentUnderTest(t *testing.T) string {
	if *flagAgent == "" && *flagAddr == "" && devAgent != nil && !testing.Short() {
		return devAgent(t)
	}
	return *flagAgent
}

// serverUnderTest picks -addr, else a startDev server, else skips the test.
// The default profile is contract for -addr and tenure for startDev.
func serverUnderTest(t *testing.T) (addr, profile string, reapWait time.Duration) {
	addr, profile, reapWait = *flagAddr, *flagProfile, *flagReapWait
	if addr == "" {
		if startDev == nil {
			t.Skip("no -addr given and startDev is nil (no in-process server linked in); " +
				"run: go test ./spec/conformance -addr http://127.0.0.1:8500 -profile consul")
		}
		addr, reapWait = startDev(t), devReapWait
		if profile == "" {
			profile = string(Tenure)
		}
	}
	if profile == "" {
		profile = string(Contract)
	}
	return addr, profile, reapWait
}
