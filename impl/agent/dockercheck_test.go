package agent_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestDockerCheckWithoutDocker follows consul/api's docker check test: the
// registration is accepted with script checks enabled and listed as a
// docker check of its service; with no engine at $DOCKER_HOST the check
// goes critical with the reason as its output, as Consul's does. Without
// enable_script_checks the registration is Consul's 500.
func TestDockerCheckWithoutDocker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	a := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.Local.Policy.EnableScriptChecks = true
		c.Local.Stagger = func(time.Duration) time.Duration { return 0 }
	})
	c := client(t, a.HTTPAddr())
	if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{Name: "redis"}); err != nil {
		t.Fatal(err)
	}
	reg := &api.AgentCheckRegistration{Name: "redischeck", ServiceID: "redis", AgentServiceCheck: api.AgentServiceCheck{
		DockerContainerID: "f972c95ebf0e", Args: []string{"/bin/true"}, Shell: "/bin/bash", Interval: "10s"}}
	if err := c.Agent().CheckRegister(reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		checks, err := c.Agent().Checks()
		if err != nil {
			t.Fatal(err)
		}
		ch := checks["redischeck"]
		if ch == nil || ch.Type != "docker" || ch.ServiceID != "redis" {
			t.Fatalf("check %+v", ch)
		}
		if ch.Status == api.HealthCritical && strings.Contains(ch.Output, "create exec failed for container f972c95ebf0e") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the check did not report the missing engine: %+v", ch)
		}
		time.Sleep(50 * time.Millisecond)
	}

	plain := agenttest.StartDevAgent(t, nil)
	err := client(t, plain.HTTPAddr()).Agent().CheckRegister(reg)
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "Scripts are disabled on this agent from remote calls") {
		t.Fatalf("docker check without enable_script_checks: %v", err)
	}
}
