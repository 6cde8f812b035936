// Command tenure is the reference implementation of Consul's session and
// lock contract: `tenure agent` runs a server with Consul's HTTP API,
// `tenure conform` checks any Consul-API server against the contract, and
// `tenure lock` runs a command while holding a lock or semaphore slot.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/tenurekv/tenure/recipe/lockcmd"
	"github.com/tenurekv/tenure/spec/conformance"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: tenure <command> [flags]

commands:
  agent     run an agent with Consul's flags (tenure agent -dev; tenure agent -h)
  conform   check a Consul-API server against the contract (tenure conform -h)
  lock      run a command while holding a lock or semaphore slot (tenure lock -h)
  validate  check agent config files without starting an agent (as consul validate)
  version   print the version (-format=json as consul version; -v and --version too)
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if isVersionFlag(args[0]) {
		return runVersion(nil, stdout, stderr)
	}
	switch args[0] {
	case "agent":
		return runAgent(args[1:], stderr)
	case "conform":
		return conformance.Main(args[1:], stdout, stderr)
	case "lock":
		return lockcmd.LockMain(args[1:], stdout, stderr)
	case "validate":
		return runValidate(args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "tenure: unknown command %q\n\n%s", args[0], usage)
	return 2
}
