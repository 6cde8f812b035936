package local

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/checks"
)

// fallback is a SyncConfig.RegisterToken as the agent's: an entry's own
// token, else "cfg" for one the configuration or the agent defined, else
// "default".
func fallback(own string, local bool) string {
	switch {
	case own != "":
		return own
	case local:
		return "cfg"
	}
	return "default"
}

// tokenLog is a MemCatalog that notes each register as "<token>
// <entries>", in the order made.
type tokenLog struct {
	*MemCatalog
	calls []string
}

func (l *tokenLog) Register(node string, svc *Service, cs []Check, token string) error {
	var parts []string
	if svc != nil {
		parts = append(parts, "svc="+svc.ID)
	}
	for _, c := range cs {
		parts = append(parts, "check="+c.CheckID)
	}
	l.calls = append(l.calls, token+" "+strings.Join(parts, ","))
	return l.MemCatalog.Register(node, svc, cs, token)
}

// TestSyncWritesEachEntryWithItsToken: a service's register carries its
// own token, and its changed checks ride along only when theirs is the
// same (after the fallbacks); a check with another token goes in a write
// of its own with its service beside it, and node checks in one write per
// token, as Consul's agent sends them.
func TestSyncWritesEachEntryWithItsToken(t *testing.T) {
	cat := &tokenLog{MemCatalog: NewMemCatalog()}
	st := newState(node, 0, zero)
	s := newSyncer(st, cat, SyncConfig{Stagger: zero, RegisterToken: fallback})
	st.addService(Service{ID: "w", Service: "w"}, regToken{secret: "A"})
	st.addCheck(svcCheck("w-same", "w", checks.Passing), 0, regToken{secret: "A"})
	st.addCheck(svcCheck("w-other", "w", checks.Passing), 0, regToken{secret: "B"})
	st.addService(Service{ID: "v", Service: "v"}, regToken{})
	st.addCheck(svcCheck("v-default", "v", checks.Passing), 0, regToken{secret: "default"})
	st.addCheck(Check{CheckID: "n-b", Status: checks.Passing}, 0, regToken{secret: "B"})
	st.addCheck(Check{CheckID: "n-cfg", Status: checks.Passing}, 0, regToken{local: true})
	st.addCheck(Check{CheckID: "n-cfg2", Status: checks.Passing}, 0, regToken{local: true})
	mustSync(t, s)
	want := []string{
		"default svc=v,check=v-default", // no token falls back to the default, which the check names outright
		"A svc=w,check=w-same",
		"B check=n-b",
		"cfg check=n-cfg,check=n-cfg2",
		"B svc=w,check=w-other",
	}
	if strings.Join(cat.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(cat.calls, "\n"), strings.Join(want, "\n"))
	}
	// Everything is in sync: a second sync writes nothing.
	cat.calls = nil
	mustSync(t, s)
	if len(cat.calls) != 0 {
		t.Fatalf("a second sync wrote %v", cat.calls)
	}
	// A token set meanwhile is read at the next sync.
	s.cfg.RegisterToken = func(own string, local bool) string { return "new:" + fallback(own, local) }
	st.updateCheck("n-cfg", checks.Critical, "")
	mustSync(t, s)
	if got, _ := cat.tokenOf("check", "n-cfg"); got != "new:cfg" {
		t.Fatalf("n-cfg written with %q after the fallback changed", got)
	}
}

// TestSyncWithoutResolverSendsOwnToken: with no RegisterToken the entry's
// own token goes as it is ("" for none).
func TestSyncWithoutResolverSendsOwnToken(t *testing.T) {
	cat := NewMemCatalog()
	st, s := newSynced(cat)
	st.addService(Service{ID: "w", Service: "w"}, regToken{secret: "A"})
	st.addCheck(Check{CheckID: "n", Status: checks.Passing}, 0, regToken{local: true})
	mustSync(t, s)
	if got, _ := cat.tokenOf("service", "w"); got != "A" {
		t.Fatalf("w written with %q", got)
	}
	if got, ok := cat.tokenOf("check", "n"); !ok || got != "" {
		t.Fatalf("n written with %q (written: %v)", got, ok)
	}
}

// aclCatalog is a MemCatalog that lets only token "web-w" write service
// web (and its checks), and "node-w" the node's checks, as a catalog with
// default deny does.
func aclCatalog() *MemCatalog {
	cat := NewMemCatalog()
	cat.requireTokens(func(token string, svc *Service, cs []Check) bool {
		if svc != nil && (svc.Service != "web" || token != "web-w") {
			return false
		}
		for _, c := range cs {
			if c.ServiceID == "" && token != "node-w" {
				return false
			}
		}
		return true
	})
	return cat
}

// TestRegistrationsKeepTheirTokens: a registration keeps the token it is
// given, and anti-entropy writes it with that token: a service whose token
// may write it reaches the catalog, one without a token does not (there is
// no default token to fall back to), and a check with its own token is
// written with it. The token shows in no service or check the agent lists.
func TestRegistrationsKeepTheirTokens(t *testing.T) {
	cat := aclCatalog()
	a := NewAgent(Config{Node: node, Stagger: zero, Sync: SyncConfig{Stagger: zero}}, cat)
	t.Cleanup(a.Close)
	register := func(body, token string) {
		t.Helper()
		def, err := DecodeService([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.RegisterService(def, checks.Remote, false, token); err != nil {
			t.Fatal(err)
		}
	}
	// The body's Token is not the one kept: the API keeps the request's.
	register(`{"ID":"web1","Name":"web","Token":"node-w","Check":{"TTL":"1h"}}`, "web-w")
	register(`{"ID":"web2","Name":"web"}`, "")
	def, err := checks.Decode([]byte(`{"Name":"disk","TTL":"1h","Token":"web-w"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterCheck(def, checks.Remote, "node-w"); err != nil {
		t.Fatal(err)
	}
	if err := a.Syncer().SyncChanges(); err != nil {
		t.Fatal(err) // ACL refusals count as done
	}
	for _, w := range []struct{ kind, id, token string }{
		{"service", "web1", "web-w"}, {"check", "service:web1", "web-w"}, {"check", "disk", "node-w"},
	} {
		if got, ok := cat.tokenOf(w.kind, w.id); !ok || got != w.token {
			t.Errorf("%s %s in the catalog written with %q (written: %v), want %q", w.kind, w.id, got, ok, w.token)
		}
	}
	if _, ok := cat.tokenOf("service", "web2"); ok {
		t.Error("web2, registered without a token, reached the catalog")
	}
	if got := a.State().ServiceToken("web1"); got != "web-w" {
		t.Errorf("ServiceToken(web1) = %q", got)
	}
	if got := a.State().CheckToken("disk"); got != "node-w" {
		t.Errorf("CheckToken(disk) = %q", got)
	}
	shown, err := json.Marshal([]any{a.State().Services(), a.State().Checks()})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(shown, []byte("web-w")) || bytes.Contains(shown, []byte("node-w")) {
		t.Fatalf("a token shows in the agent's services or checks: %s", shown)
	}
}

// TestConfigAndMaintenanceTokens: a config file's service keeps its token
// field and its checks the service's; a config check its own; maintenance
// checks the caller's. Those without one fall back as the agent's own
// definitions do (the config-file registration token first).
func TestConfigAndMaintenanceTokens(t *testing.T) {
	cat := &tokenLog{MemCatalog: NewMemCatalog()}
	a := NewAgent(Config{Node: node, Stagger: zero, Sync: SyncConfig{Stagger: zero, RegisterToken: fallback}}, cat)
	t.Cleanup(a.Close)
	defs, err := DecodeConfigDefinitions(
		[][]byte{[]byte(`{"ID":"db","Name":"db","Token":"svc-tok","Check":{"TTL":"1h","Token":"ignored"}}`), []byte(`{"Name":"cache"}`)},
		[][]byte{[]byte(`{"Name":"mem","TTL":"1h","Token":"chk-tok"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.LoadConfig(defs); err != nil {
		t.Fatal(err)
	}
	expect := func(want []string) {
		t.Helper()
		if err := a.Syncer().SyncChanges(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cat.calls, "\n"); got != strings.Join(want, "\n") {
			t.Fatalf("writes:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
		}
		cat.calls = nil
	}
	expect([]string{"cfg svc=cache", "svc-tok svc=db,check=service:db", "chk-tok check=mem"})
	if err := a.EnableServiceMaintenance("db", "", "maint-tok"); err != nil {
		t.Fatal(err)
	}
	if err := a.EnableNodeMaintenance("", ""); err != nil {
		t.Fatal(err)
	}
	// The service maintenance check's token is not its service's: it is
	// written apart, with the service beside it.
	expect([]string{"cfg check=_node_maintenance", "maint-tok svc=db,check=_service_maintenance:db"})
}

// TestTokensSurviveARestart: the tokens are kept in the registration files
// and used again after a restart; a file written before tenure kept
// tokens still loads, as a registration without one. (That no token
// reaches an agent's log is impl/agent's TestRegistrationTokens.)
func TestTokensSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	a, _ := restarted(t, nil, dir)
	def, err := DecodeService([]byte(`{"ID":"web1","Name":"web","Check":{"CheckID":"web1-ttl","TTL":"1h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterService(def, checks.Remote, false, "web-w"); err != nil {
		t.Fatal(err)
	}
	registerCheck(t, a, `{"Name":"old","TTL":"1h"}`)
	if err := a.EnableNodeMaintenance("", "node-w"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	// "old" as an earlier tenure wrote it: no Token field.
	path := filepath.Join(dir, checksDir, fileName("old"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if _, ok := p["Token"]; ok {
		t.Fatalf("a registration without a token wrote one: %s", data)
	}

	cat := aclCatalog()
	b := NewAgent(Config{Node: node, Stagger: func(d time.Duration) time.Duration { return d }, Sync: SyncConfig{Stagger: zero},
		DataDir: dir}, cat)
	t.Cleanup(b.Close)
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ id, token string }{{"web1-ttl", "web-w"}, {"old", ""}, {NodeMaintenanceCheckID, "node-w"}} {
		if got := b.State().CheckToken(w.id); got != w.token {
			t.Errorf("after a restart check %s keeps %q, want %q", w.id, got, w.token)
		}
	}
	if got := b.State().ServiceToken("web1"); got != "web-w" {
		t.Errorf("after a restart web1 keeps %q", got)
	}
	if err := b.Syncer().SyncChanges(); err != nil {
		t.Fatal(err)
	}
	if got, ok := cat.tokenOf("service", "web1"); !ok || got != "web-w" {
		t.Errorf("web1 written with %q after the restart (written: %v)", got, ok)
	}
	if got, ok := cat.tokenOf("check", NodeMaintenanceCheckID); !ok || got != "node-w" {
		t.Errorf("node maintenance written with %q after the restart (written: %v)", got, ok)
	}
	if _, ok := cat.tokenOf("check", "old"); ok {
		t.Error("old, kept without a token, reached a catalog that needs one")
	}
}
