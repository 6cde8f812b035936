package agent_test

import (
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// cachedReads checks, through Consul's client, that ?cached reads of the
// catalog and health are answered by the agent cache: a hit after the
// first read, Age 0, and a registration reaching the entry through its
// background refresh.
func cachedReads(t *testing.T, c *api.Client) {
	t.Helper()
	q := &api.QueryOptions{UseCache: true}
	if _, meta, err := c.Catalog().Service("web", "", q); err != nil || meta.CacheHit {
		t.Fatalf("first cached read: hit %v, %v", meta != nil && meta.CacheHit, err)
	}
	if _, meta, err := c.Health().Service("web", "", false, q); err != nil || meta.CacheHit {
		t.Fatalf("first cached health read: %v", err)
	}
	svcs, meta, err := c.Catalog().Service("web", "", q)
	if err != nil || !meta.CacheHit || meta.CacheAge != 0 || len(svcs) != 0 {
		t.Fatalf("second cached read: %d services, %+v, %v", len(svcs), meta, err)
	}
	if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: "web1", Name: "web", Port: 80}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cached entries show the new service", func() error {
		svcs, meta, err := c.Catalog().Service("web", "", q)
		if err != nil || !meta.CacheHit || len(svcs) != 1 {
			return errorf("catalog: %d services, hit %v, %v", len(svcs), meta != nil && meta.CacheHit, err)
		}
		entries, meta, err := c.Health().Service("web", "", false, q)
		if err != nil || !meta.CacheHit || len(entries) != 1 {
			return errorf("health: %d entries, hit %v, %v", len(entries), meta != nil && meta.CacheHit, err)
		}
		return nil
	})
}

// TestServerAgentCache: a server agent answers ?cached reads from its
// cache, as Consul's agent does (TestAPI_CatalogServiceCached).
func TestServerAgentCache(t *testing.T) {
	a := agenttest.StartDevAgent(t, nil)
	cachedReads(t, client(t, a.HTTPAddr()))
}

// TestClientAgentCache: so does a client agent, whose cache fetches from
// the servers.
func TestClientAgentCache(t *testing.T) {
	srv := agenttest.StartDevAgent(t, nil)
	cl := agenttest.StartClient(t, "c1", srv)
	c := client(t, cl.HTTPAddr())
	eventually(t, "the client agent reaches a server", func() error {
		_, err := c.Catalog().Datacenters()
		return err
	})
	cachedReads(t, c)
}

// TestAgentCacheOff: with the cache off (http_config.use_cache = false)
// ?cached reads go to the servers, with no X-Cache.
func TestAgentCacheOff(t *testing.T) {
	a := agenttest.StartDevAgent(t, func(cfg *agent.Config) { cfg.NoAgentCache = true })
	c := client(t, a.HTTPAddr())
	for range 2 {
		_, meta, err := c.Catalog().Service("consul", "", &api.QueryOptions{UseCache: true})
		if err != nil || meta.CacheHit || meta.CacheAge != 0 {
			t.Fatalf("cached read with the cache off: %+v, %v", meta, err)
		}
	}
}
