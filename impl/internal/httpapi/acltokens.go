package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/tenurekv/tenure/acl"
)

// The agent's own tokens (acl.tokens.*), by the names acl-tokens.json uses.
const (
	TokenDefault                = "default"
	TokenAgent                  = "agent"
	TokenAgentRecovery          = "agent_recovery"
	TokenReplication            = "replication"
	TokenConfigFileRegistration = "config_file_service_registration"
	TokenDNS                    = "dns"
)

// tokenNames maps every name PUT /v1/agent/token/<name> accepts, Consul's
// deprecated ones included, to the token it sets.
var tokenNames = map[string]string{
	"default":                          TokenDefault,
	"acl_token":                        TokenDefault,
	"agent":                            TokenAgent,
	"acl_agent_token":                  TokenAgent,
	"agent_recovery":                   TokenAgentRecovery,
	"agent_master":                     TokenAgentRecovery,
	"acl_agent_master_token":           TokenAgentRecovery,
	"replication":                      TokenReplication,
	"acl_replication_token":            TokenReplication,
	"config_file_service_registration": TokenConfigFileRegistration,
	"dns":                              TokenDNS,
	"dns_token":                        TokenDNS,
}

// TokensFile is where an agent with enable_token_persistence keeps the
// tokens set through the API, in its data dir.
const TokensFile = "acl-tokens.json"

// maxTokenLen bounds a token set through the API (S39); secrets are UUIDs.
const maxTokenLen = 1 << 10

// AgentTokens holds an agent's own tokens: those of its configuration,
// replaced by any set through PUT /v1/agent/token/<name>, which are also
// written to a file when persistence is on and read back at start, taking
// precedence over the configuration as in Consul. The nil value has none.
type AgentTokens struct {
	mu sync.RWMutex
	// tokens by name; fromAPI marks the ones the file keeps.
	tokens  map[string]string
	fromAPI map[string]bool
	file    string // "" without persistence
}

// NewAgentTokens returns the tokens of config (by the names above),
// overlaid with those persisted in file if it is not "". A file that does
// not exist is no error; one that does not decode is, since starting
// without a token an operator set could deny the agent its own requests.
func NewAgentTokens(config map[string]string, file string) (*AgentTokens, error) {
	t := &AgentTokens{tokens: map[string]string{}, fromAPI: map[string]bool{}, file: file}
	for name, v := range config {
		canon, ok := tokenNames[name]
		if !ok {
			return nil, fmt.Errorf("agent tokens: unknown token %q", name)
		}
		t.tokens[canon] = v
	}
	if file == "" {
		return t, nil
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent tokens: read %s: %w", file, err)
	}
	var stored map[string]string
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, fmt.Errorf("agent tokens: decode %s: %w", file, err)
	}
	if v, ok := stored["agent_master"]; ok && stored[TokenAgentRecovery] == "" {
		stored[TokenAgentRecovery] = v // the name older files used
	}
	for name, v := range stored {
		if canon := tokenNames[name]; canon == name && v != "" {
			t.tokens[name], t.fromAPI[name] = v, true
		}
	}
	return t, nil
}

// Get returns the named token ("" for none).
func (t *AgentTokens) Get(name string) string {
	if t == nil {
		return ""
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.tokens[name]
}

// AgentSecret is the token the agent's own requests carry where Consul's
// agent uses its agent token (its node's record, anti-entropy's reads and
// deletions): acl.tokens.agent, else acl.tokens.default; "" when neither is
// set.
func (t *AgentTokens) AgentSecret() string {
	if s := t.Get(TokenAgent); s != "" {
		return s
	}
	return t.Get(TokenDefault)
}

// set replaces a token as the API does and, with persistence, writes every
// API-set token to the file before it answers, so a restart keeps it. On a
// failed write the token is not changed.
func (t *AgentTokens) set(name, secret string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, prevAPI := t.tokens[name], t.fromAPI[name]
	t.tokens[name], t.fromAPI[name] = secret, true
	if t.file == "" {
		return nil
	}
	stored := map[string]string{}
	for n, api := range t.fromAPI {
		if api && t.tokens[n] != "" {
			stored[n] = t.tokens[n]
		}
	}
	if err := writeFileAtomic(t.file, stored); err != nil {
		t.tokens[name], t.fromAPI[name] = prev, prevAPI
		return fmt.Errorf("persist agent tokens: %w", err)
	}
	return nil
}

// writeFileAtomic writes v as JSON to path through a synced temporary file
// and a rename, readable by the agent's user only: it holds secrets.
func writeFileAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// agentTokenBody is PUT /v1/agent/token/<name>'s body.
type agentTokenBody struct {
	Token string
}

// Authorize decides one permission for a request on an agent: on a server
// over its own replicated tables, on a client agent by asking a server.
type Authorize func(r *http.Request, res acl.Resource, name string, need acl.Access) error

// agentToken is PUT /v1/agent/token/<name>: it needs agent:write on this
// agent's node and sets one of the agent's own tokens (S87). A token's
// value is never logged.
func (h *localHandler) agentToken(c *call) error {
	if !h.acl.enabled() {
		return errorf(http.StatusUnauthorized, "%s", acl.ErrDisabled)
	}
	if h.authorize != nil {
		if err := h.authorize(c.r, acl.ResourceAgent, h.node, acl.AccessWrite); err != nil {
			return aclFailure(err)
		}
	}
	body, err := readBody(c, maxJSONBody, bodyTooLarge)
	if err != nil {
		return err
	}
	var in agentTokenBody
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return decodeFailed(err)
		}
	}
	if err := checkLen("Token", in.Token, maxTokenLen); err != nil {
		return err
	}
	name, ok := tokenNames[c.arg]
	if !ok {
		return errorf(http.StatusNotFound, "Token %q is unknown", c.arg)
	}
	if err := h.acl.Tokens.set(name, in.Token); err != nil {
		return err
	}
	h.log.Info("updated the agent's ACL token", "token", name)
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	return nil
}
