package recipe_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/recipe"
)

// TestMain points CONSUL_HTTP_ADDR, which api.DefaultConfig reads, at the
// test server, so the example below reads like client code.
func TestMain(m *testing.M) {
	addr, err := agenttest.SharedAddr()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("CONSUL_HTTP_ADDR", addr)
	os.Exit(agenttest.Main(m))
}

func ExampleElection() {
	c, err := recipe.NewClient(api.DefaultConfig()) // CONSUL_HTTP_ADDR
	if err != nil {
		log.Fatal(err)
	}
	e, err := c.Election("billing", recipe.LockOptions{Value: []byte("10.0.0.7:8080")})
	if err != nil {
		log.Fatal(err)
	}
	term, err := e.Campaign(context.Background()) // blocks until elected
	if err != nil {
		log.Fatal(err)
	}
	defer term.Release(context.Background())
	fmt.Println("leading:", term.Sequencer().Key)
	// Lead until term.Lost() closes, and send every write through
	// c.Fence(ctx, term.Sequencer(), ops) so a deposed leader's write fails.

	// Output: leading: service/billing/leader
}
