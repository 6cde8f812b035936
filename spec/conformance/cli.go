package conformance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
)

// usageError marks bad command-line input (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func quote(s string) string { return strconv.Quote(s) }

// Exit codes of Main.
const (
	exitOK    = 0 // every selected case passed or was skipped
	exitFail  = 1 // a case failed, or the server could not be reached
	exitUsage = 2 // bad flags
)

// mainCases is the case set Main runs; tests substitute their own.
var mainCases = Suite

// Main implements `tenure conform`. args are the arguments after "conform".
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tenure conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "http://127.0.0.1:8500", "base URL of the Consul-API server under test")
	token := fs.String("token", "", "ACL token sent as X-Consul-Token")
	profile := fs.String("profile", string(Contract), "clauses to check: contract, consul (contract+consul), tenure (contract+tenure), or the ACL cases: acl, acl-consul, acl-tenure (need ACLs on and -token a management token)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	run := fs.String("run", "", "only run cases whose ID (e.g. S27/acquire-unlocked-bumps-lockindex) matches this regexp")
	parallel := fs.Int("parallel", defaultParallel, "cases run at once")
	skipSlow := fs.Bool("skip-slow", false, "skip cases that wait out real TTL and lock-delay timers (about a minute)")
	list := fs.Bool("list", false, "list the cases and their status, run nothing")
	reapWait := fs.Duration("reap-wait", 0, "how long the server takes to reap a deletion (reap window plus interval); 0 skips the S52 case")
	agentBin := fs.String("agent", "", "agent binary of the server's kind (consul or tenure), with Consul's agent flags; the S53 cases that need gossip members of their own start client agents from it")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tenure conform [-addr URL] [-token T] [-profile contract|consul|tenure|acl|acl-consul|acl-tenure] [-json] [-run REGEXP]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tenure conform: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	p, err := parseStatus(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "tenure conform: %v\n", err)
		return exitUsage
	}
	if _, err := regexp.Compile(*run); err != nil {
		fmt.Fprintf(stderr, "tenure conform: bad -run regexp: %v\n", err)
		return exitUsage
	}
	if *parallel < 1 {
		fmt.Fprintf(stderr, "tenure conform: -parallel must be at least 1\n")
		return exitUsage
	}
	if _, err := newEnv(*addr, *token); err != nil {
		fmt.Fprintf(stderr, "tenure conform: %v\n", err)
		return exitUsage
	}
	opts := Options{Addr: *addr, Token: *token, Profile: p, Parallel: *parallel,
		JSON: *asJSON, Filter: *run, SkipSlow: *skipSlow, ReapWait: *reapWait, Agent: *agentBin, cases: mainCases()}
	if *list {
		return listCases(stdout, opts)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep := Run(ctx, opts)
	if opts.JSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tenure conform: %v\n", err)
		return exitFail
	}
	return rep.ExitCode()
}

// listCases prints the selected cases and whether the profile runs them.
func listCases(w io.Writer, opts Options) int {
	re := regexp.MustCompile(opts.Filter) // validated by Main
	for _, c := range opts.cases {
		if !re.MatchString(c.ID()) {
			continue
		}
		what := "run"
		if r := skipReason(c, opts.Profile, opts.SkipSlow, opts.Agent); r != "" {
			what = "skip: " + r
		}
		fmt.Fprintf(w, "%-55s %-9s %s\n", c.ID(), c.status(), what)
	}
	return exitOK
}
