package lockcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

const aclRoot = "4b0c6b2e-1f7e-4c55-9b6a-3c2d1e0f9a87"

// aclAgent starts a dev agent (node "dev") with ACLs on, default deny, and
// waits until its management token is usable.
func aclAgent(t *testing.T) (string, *api.Client) {
	t.Helper()
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.ACL = agent.ACLConfig{Enabled: true, DefaultPolicy: "deny", Tokens: map[string]string{"initial_management": aclRoot}}
	})
	c, err := api.NewClient(&api.Config{Address: srv.HTTPAddr(), Token: aclRoot})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, err := c.ACL().TokenReadSelf(nil); err == nil {
			return srv.HTTPAddr(), c
		} else if time.Now().After(deadline) {
			t.Fatalf("management token never usable: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// aclToken makes a token holding one policy of rules.
func aclToken(t *testing.T, c *api.Client, name, rules string) *api.ACLToken {
	t.Helper()
	p, _, err := c.ACL().PolicyCreate(&api.ACLPolicy{Name: name, Rules: rules}, nil)
	if err != nil {
		t.Fatalf("policy %s: %v", name, err)
	}
	tok, _, err := c.ACL().TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: p.ID}}}, nil)
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	return tok
}

// TestLockWithACLs: with ACLs on and default deny, a token that may write
// the lock key and create sessions on the agent's node takes the lock,
// given by -token, -token-file or CONSUL_HTTP_TOKEN, and the child gets the
// flag's token; a token lacking either permission, or none, fails with
// Consul's 403 text.
func TestLockWithACLs(t *testing.T) {
	addr, root := aclAgent(t)
	prefix := uniq("acl")
	good := aclToken(t, root, "lock-ok", `key_prefix "`+prefix+`/" { policy = "write" }
session "dev" { policy = "write" }`)
	noKey := aclToken(t, root, "lock-no-key", `key_prefix "`+prefix+`/" { policy = "read" }
session "dev" { policy = "write" }`)
	noSession := aclToken(t, root, "lock-no-session", `key_prefix "`+prefix+`/" { policy = "write" }`)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(good.SecretID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	child := `echo "tok=$CONSUL_HTTP_TOKEN held=$CONSUL_LOCK_HELD"`

	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string // stdout
	}{
		{"flag", []string{"-token", good.SecretID}, "", "tok=" + good.SecretID + " held=true\n"},
		// -token-file wins over -token, as in Consul's CLI.
		{"file", []string{"-token", noKey.SecretID, "-token-file", file}, "", "tok=" + noKey.SecretID + " held=true\n"},
		{"env", nil, good.SecretID, "tok=" + good.SecretID + " held=true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CONSUL_HTTP_TOKEN", tc.env)
			out, errOut := newOutput(), newOutput()
			args := append(append([]string{"-http-addr", addr, "-lock-delay", "0s"}, tc.args...), prefix, child)
			if code := Run(context.Background(), args, out, errOut); code != 0 {
				t.Fatalf("exit %d; stderr %q", code, errOut.String())
			}
			if got := out.String(); got != tc.want {
				t.Errorf("child printed %q, want %q", got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name, token, want string
	}{
		{"no-key-write", noKey.SecretID, `Permission denied: token with AccessorID '` + noKey.AccessorID + `' lacks permission 'key:write' on "` + prefix + `/.lock"`},
		{"no-session-write", noSession.SecretID, `Permission denied: token with AccessorID '` + noSession.AccessorID + `' lacks permission 'session:write' on "dev"`},
		{"anonymous", "", `Permission denied: anonymous token lacks permission 'session:write' on "dev"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CONSUL_HTTP_TOKEN", "")
			out, errOut := newOutput(), newOutput()
			args := []string{"-http-addr", addr, "-lock-delay", "0s"}
			if tc.token != "" {
				args = append(args, "-token", tc.token)
			}
			args = append(args, prefix, child)
			if code := Run(context.Background(), args, out, errOut); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			got := errOut.String()
			if out.String() != "" || !strings.HasPrefix(got, "tenure lock: lock acquisition failed: ") || !strings.Contains(got, "403") ||
				!strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("stdout %q, stderr %q: want one line naming the 403 and %q", out.String(), got, tc.want)
			}
		})
	}
	// The refusals changed nothing: the lock key was never written.
	if kv, _, err := root.KV().Get(prefix+"/.lock", nil); err != nil || kv != nil && kv.Session != "" {
		t.Fatalf("lock key after the runs: %+v, %v", kv, err)
	}
}
