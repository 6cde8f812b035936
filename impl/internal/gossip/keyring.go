package gossip

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
)

// KeyringFile is where an agent keeps its gossip keyring, under its data
// dir: Consul's path, so a Consul data dir's keyring carries over.
const KeyringFile = "serf/local.keyring"

// maxKeyringFile bounds the keyring file: a handful of 44-byte keys.
const maxKeyringFile = 64 << 10

// setupKeyring is the agent's gossip keyring and the file serf keeps it in
// ("" when none), as Consul sets them up: without a file (no data dir, or
// DisableKeyringFile) the keyring is EncryptKey alone; otherwise
// EncryptKey is written to the file on first start, and once the file
// exists it is the keyring, whatever EncryptKey says (a key it lacks is
// warned about). Nil without a key anywhere: gossip is not encrypted.
func setupKeyring(cfg Config, logger hclog.Logger) (*memberlist.Keyring, string, error) {
	if cfg.DataDir == "" || cfg.DisableKeyringFile {
		if len(cfg.EncryptKey) == 0 {
			return nil, "", nil
		}
		k, err := memberlist.NewKeyring(nil, cfg.EncryptKey)
		if err != nil {
			return nil, "", fmt.Errorf("gossip: encrypt key: %w", err)
		}
		return k, "", nil
	}
	path := filepath.Join(cfg.DataDir, KeyringFile)
	_, statErr := os.Stat(path)
	existed := statErr == nil
	if !existed && len(cfg.EncryptKey) > 0 {
		if err := writeKeyringFile(path, cfg.EncryptKey); err != nil {
			return nil, "", err
		}
	} else if !existed {
		return nil, "", nil
	}
	keys, err := readKeyringFile(path)
	if err != nil {
		return nil, "", err
	}
	k, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return nil, "", fmt.Errorf("gossip: keyring file %s: %w", path, err)
	}
	if existed && len(cfg.EncryptKey) > 0 && !hasKey(keys, cfg.EncryptKey) {
		logger.Warn(" keyring doesn't include key provided with -encrypt, using keyring", "keyring", "LAN")
	}
	return k, path, nil
}

func hasKey(keys [][]byte, key []byte) bool {
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// writeKeyringFile writes a keyring of key alone, readable by its owner
// only, through a temporary file and a rename so that a crash leaves
// either no file or a whole one.
func writeKeyringFile(path string, key []byte) error {
	if err := memberlist.ValidateKey(key); err != nil {
		return fmt.Errorf("gossip: encrypt key: %w", err)
	}
	b, err := json.Marshal([]string{base64.StdEncoding.EncodeToString(key)})
	if err != nil {
		return fmt.Errorf("gossip: keyring file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("gossip: keyring file: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("gossip: keyring file: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("gossip: keyring file %s: %w", path, err)
	}
	return nil
}

// readKeyringFile reads a keyring file: a JSON list of base64 keys, at
// least one. Errors name the file and never a key.
func readKeyringFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gossip: keyring file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyringFile+1))
	if err != nil {
		return nil, fmt.Errorf("gossip: keyring file %s: %w", path, err)
	}
	if len(b) > maxKeyringFile {
		return nil, fmt.Errorf("gossip: keyring file %s is larger than %d bytes", path, maxKeyringFile)
	}
	var encoded []string
	if err := json.Unmarshal(b, &encoded); err != nil {
		return nil, fmt.Errorf("gossip: keyring file %s is not a JSON list of keys: %w", path, err)
	}
	if len(encoded) == 0 {
		return nil, fmt.Errorf("gossip: no keys present in keyring: %s", path)
	}
	keys := make([][]byte, len(encoded))
	for i, e := range encoded {
		k, err := base64.StdEncoding.DecodeString(e)
		if err == nil {
			err = memberlist.ValidateKey(k)
		}
		if err != nil {
			return nil, fmt.Errorf("gossip: keyring file %s: key %d: %w", path, i+1, err)
		}
		keys[i] = k
	}
	return keys, nil
}

// KeyOp is an operation on the pool's keyring.
type KeyOp int

// The keyring operations of /v1/operator/keyring.
const (
	KeyList KeyOp = iota
	KeyInstall
	KeyUse
	KeyRemove
)

// KeyringResult is what the members answered to a keyring operation:
// serf's KeyResponse. Keys and PrimaryKeys count the members holding each
// (base64) key; Messages are the members' errors and warnings by node.
type KeyringResult struct {
	Messages    map[string]string
	Keys        map[string]int
	PrimaryKeys map[string]int
	NumNodes    int
}

// errNoKeyManager is returned when serf has not started.
var errNoKeyManager = errors.New("gossip: no keyring manager")

// Keyring runs op across the pool through serf's key manager: every
// member applies it to its own keyring (and keyring file) and answers;
// key is a base64 key (ignored by KeyList). relayFactor is how many other
// members relay each answer (0 to 5). The error, if any, says how many
// members failed; the result holds what each said.
func (p *Pool) Keyring(op KeyOp, key string, relayFactor uint8) (KeyringResult, error) {
	km := p.serf.KeyManager()
	if km == nil {
		return KeyringResult{}, errNoKeyManager
	}
	var (
		resp *serf.KeyResponse
		err  error
	)
	switch op {
	case KeyList:
		resp, err = km.ListKeysWithOptions(keyOpts(relayFactor))
	case KeyInstall:
		resp, err = km.InstallKeyWithOptions(key, keyOpts(relayFactor))
	case KeyUse:
		resp, err = km.UseKeyWithOptions(key, keyOpts(relayFactor))
	case KeyRemove:
		resp, err = km.RemoveKeyWithOptions(key, keyOpts(relayFactor))
	default:
		return KeyringResult{}, fmt.Errorf("gossip: unknown keyring operation %d", op)
	}
	var out KeyringResult
	if resp != nil {
		out = KeyringResult{Messages: resp.Messages, Keys: resp.Keys, PrimaryKeys: resp.PrimaryKeys, NumNodes: resp.NumNodes}
	}
	return out, err
}

func keyOpts(relayFactor uint8) *serf.KeyRequestOptions {
	return &serf.KeyRequestOptions{RelayFactor: relayFactor}
}
