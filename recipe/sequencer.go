package recipe

import (
	"fmt"
	"strconv"
)

// Sequencer names one holding period of a key (SPEC S40): a resource that
// checks it on every request rejects holders from earlier periods (S50).
type Sequencer struct {
	Key       string
	LockIndex uint64
	Session   string
	// ModifyIndex is the key's ModifyIndex right after the acquire. Only
	// Fence's Consul fallback uses it (check-index); tenure's
	// check-sequencer needs the triple alone.
	ModifyIndex uint64
}

func (s Sequencer) String() string {
	return fmt.Sprintf("%s@%d/%s", s.Key, s.LockIndex, s.Session)
}

// Environment variable names under which `tenure lock` hands the sequencer
// to its child; SequencerFromEnv reads them back.
const (
	EnvKey         = "TENURE_LOCK_KEY"
	EnvLockIndex   = "TENURE_LOCK_INDEX"
	EnvSession     = "TENURE_LOCK_SESSION"
	EnvModifyIndex = "TENURE_LOCK_MODIFY_INDEX"
)

// Env renders s as KEY=value pairs for a child process.
func (s Sequencer) Env() []string {
	return []string{
		EnvKey + "=" + s.Key,
		EnvLockIndex + "=" + strconv.FormatUint(s.LockIndex, 10),
		EnvSession + "=" + s.Session,
		EnvModifyIndex + "=" + strconv.FormatUint(s.ModifyIndex, 10),
	}
}

// SequencerFromEnv reads what Env wrote, through getenv (os.Getenv).
func SequencerFromEnv(getenv func(string) string) (Sequencer, error) {
	s := Sequencer{Key: getenv(EnvKey), Session: getenv(EnvSession)}
	if s.Key == "" || s.Session == "" {
		return Sequencer{}, fmt.Errorf("recipe: %s and %s must both be set", EnvKey, EnvSession)
	}
	var err error
	if s.LockIndex, err = strconv.ParseUint(getenv(EnvLockIndex), 10, 64); err != nil {
		return Sequencer{}, fmt.Errorf("recipe: %s: %w", EnvLockIndex, err)
	}
	if v := getenv(EnvModifyIndex); v != "" {
		if s.ModifyIndex, err = strconv.ParseUint(v, 10, 64); err != nil {
			return Sequencer{}, fmt.Errorf("recipe: %s: %w", EnvModifyIndex, err)
		}
	}
	return s, nil
}
