package gossip

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/internal/testlog"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// startKeyed starts a pool with cfg's keyring settings on loopback.
func startKeyed(t *testing.T, cfg Config) (*Pool, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	cfg.BindAddr, cfg.Timing = "127.0.0.1", DevTiming
	cfg.Tags = map[string]string{TagRole: RoleClient}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p, logs
}

func readKeys(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, KeyringFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestKeyringFile: the first start writes -encrypt's key to the data dir,
// owner-only; later starts take the file, with or without -encrypt (a key
// it lacks is warned about, never shown); disable_keyring_file keeps the
// key in memory only.
func TestKeyringFile(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := testKey(1), testKey(2)
	p, _ := startKeyed(t, Config{NodeName: "a", DataDir: dir, EncryptKey: k1})
	if got := readKeys(t, dir); len(got) != 1 || got[0] != b64(k1) {
		t.Fatalf("keyring file %v, want [k1]", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, KeyringFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keyring file mode: %v %v", fi, err)
	}
	_ = p.Shutdown()

	p, logs := startKeyed(t, Config{NodeName: "a", DataDir: dir})
	if !p.serf.EncryptionEnabled() {
		t.Fatal("a restart without -encrypt does not encrypt with the keyring file")
	}
	_ = p.Shutdown()
	if strings.Contains(logs.String(), "keyring doesn't include") {
		t.Fatalf("warned without -encrypt: %s", logs)
	}

	p, logs = startKeyed(t, Config{NodeName: "a", DataDir: dir, EncryptKey: k2})
	if !strings.Contains(logs.String(), "keyring doesn't include key provided with -encrypt, using keyring") {
		t.Fatalf("no warning for a -encrypt key the keyring lacks:\n%s", logs)
	}
	if strings.Contains(logs.String(), b64(k2)) || strings.Contains(logs.String(), b64(k1)) {
		t.Fatalf("a key was logged:\n%s", logs)
	}
	if got := readKeys(t, dir); len(got) != 1 || got[0] != b64(k1) {
		t.Fatalf("keyring file %v after a start with another key, want it unchanged", got)
	}
	_ = p.Shutdown()

	other := t.TempDir()
	p, _ = startKeyed(t, Config{NodeName: "b", DataDir: other, EncryptKey: k1, DisableKeyringFile: true})
	if !p.serf.EncryptionEnabled() {
		t.Fatal("disable_keyring_file turned encryption off")
	}
	if _, err := os.Stat(filepath.Join(other, KeyringFile)); !os.IsNotExist(err) {
		t.Fatalf("disable_keyring_file wrote a keyring file: %v", err)
	}
}

// TestKeyringFileRefusesBadInput: a keyring file that is not a JSON list
// of valid keys stops the start, saying which file and never a key.
func TestKeyringFileRefusesBadInput(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":   "k1",
		"empty":      "[]",
		"not base64": `["***"]`,
		"short key":  `["` + b64([]byte("short")) + `"]`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, KeyringFile)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Start(Config{NodeName: "a", BindAddr: "127.0.0.1", DataDir: dir})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("start with a bad keyring file: %v", err)
			}
		})
	}
}

// TestWrongGossipKeyRefused: a member with another key, or with none, is
// refused; with encrypt_verify_incoming and _outgoing off, the keyed
// member talks to an unkeyed one (the first steps of turning encryption
// on in a running cluster).
func TestWrongGossipKeyRefused(t *testing.T) {
	a, _ := startKeyed(t, Config{NodeName: "a", EncryptKey: testKey(1)})
	b, _ := startKeyed(t, Config{NodeName: "b", EncryptKey: testKey(2)})
	if n, err := b.Join([]string{a.Local().Addr()}); err == nil || n != 0 {
		t.Fatalf("a member with another key joined: %d %v", n, err)
	}
	c, _ := startKeyed(t, Config{NodeName: "c"})
	if n, err := c.Join([]string{a.Local().Addr()}); err == nil || n != 0 {
		t.Fatalf("an unencrypted member joined an encrypted one: %d %v", n, err)
	}
	d, _ := startKeyed(t, Config{NodeName: "d", EncryptKey: testKey(1), PlainIncoming: true, PlainOutgoing: true})
	if n, err := c.Join([]string{d.Local().Addr()}); err != nil || n != 1 {
		t.Fatalf("with verification off, an unencrypted member was refused: %d %v", n, err)
	}
}

// TestKeyringRotation: install, use and remove a key across the pool,
// as `consul keyring` does; every member's keyring file follows, the
// primary key cannot be removed, and a key that is not installed cannot
// be used.
func TestKeyringRotation(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	dirA, dirB := t.TempDir(), t.TempDir()
	a, _ := startKeyed(t, Config{NodeName: "a", DataDir: dirA, EncryptKey: k1})
	b, _ := startKeyed(t, Config{NodeName: "b", DataDir: dirB, EncryptKey: k1})
	if _, err := b.Join([]string{a.Local().Addr()}); err != nil {
		t.Fatal(err)
	}
	list := func() KeyringResult {
		t.Helper()
		r, err := a.Keyring(KeyList, "", 0)
		if err != nil {
			t.Fatalf("list: %v %+v", err, r)
		}
		return r
	}
	if r := list(); r.NumNodes != 2 || !maps.Equal(r.Keys, map[string]int{b64(k1): 2}) || !maps.Equal(r.PrimaryKeys, map[string]int{b64(k1): 2}) {
		t.Fatalf("list %+v", r)
	}
	if r, err := a.Keyring(KeyUse, b64(k2), 0); err == nil || !saysFold(r.Messages["a"], "requested key is not in the keyring") {
		t.Fatalf("use of a key not installed: %v %+v", err, r)
	}
	if _, err := a.Keyring(KeyInstall, b64(k2), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Keyring(KeyUse, b64(k2), 1); err != nil {
		t.Fatal(err)
	}
	if r := list(); !maps.Equal(r.Keys, map[string]int{b64(k1): 2, b64(k2): 2}) || !maps.Equal(r.PrimaryKeys, map[string]int{b64(k2): 2}) {
		t.Fatalf("after install and use: %+v", r)
	}
	if r, err := a.Keyring(KeyRemove, b64(k2), 0); err == nil || !saysFold(r.Messages["b"], "removing the primary key is not allowed") {
		t.Fatalf("removing the primary key: %v %+v", err, r)
	}
	if _, err := a.Keyring(KeyRemove, b64(k1), 0); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{dirA, dirB} {
		if got := readKeys(t, dir); len(got) != 1 || got[0] != b64(k2) {
			t.Fatalf("keyring file in %s: %v, want [k2]", dir, got)
		}
	}
	if r, err := a.Keyring(KeyInstall, "not base64!", 0); err == nil {
		t.Fatalf("install of a bad key: %+v", r)
	}
}

// TestKeyringWithoutEncryption: each member says encryption is off.
func TestKeyringWithoutEncryption(t *testing.T) {
	a, _ := startKeyed(t, Config{NodeName: "a"})
	r, err := a.Keyring(KeyList, "", 0)
	if err == nil || !strings.Contains(r.Messages["a"], "encryption not enabled") {
		t.Fatalf("list without encryption: %v %+v", err, r)
	}
}

// saysFold: memberlist words some errors differently from version to
// version only in their first letter's case.
func saysFold(msg, want string) bool { return strings.Contains(strings.ToLower(msg), want) }

// FuzzReadKeyringFile: whatever a keyring file holds, reading it gives an
// error or at least one key of a size memberlist takes, never a panic.
func FuzzReadKeyringFile(f *testing.F) {
	for _, s := range []string{`["` + b64(testKey(1)) + `"]`, `["` + b64(testKey(1)) + `","` + b64(make([]byte, 16)) + `"]`,
		"[]", "null", `[""]`, `["***"]`, `{"a":1}`, ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(t.TempDir(), "local.keyring")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		keys, err := readKeyringFile(path)
		if err != nil {
			return
		}
		if len(keys) == 0 {
			t.Fatal("no error and no key")
		}
		for _, k := range keys {
			if n := len(k); n != 16 && n != 24 && n != 32 {
				t.Fatalf("a key of %d bytes", n)
			}
		}
	})
}
