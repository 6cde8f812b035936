package recipe

import (
	"strings"
	"testing"
)

func TestSequencerEnvRoundTrip(t *testing.T) {
	s := Sequencer{Key: "a/b", LockIndex: 7, Session: "s", ModifyIndex: 42}
	env := map[string]string{}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err := SequencerFromEnv(func(k string) string { return env[k] })
	if err != nil || got != s {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, s)
	}
	for _, bad := range []map[string]string{
		{},
		{EnvKey: "k", EnvSession: "s"},
		{EnvKey: "k", EnvLockIndex: "1"},
		{EnvSession: "s", EnvLockIndex: "1"},
		{EnvKey: "k", EnvSession: "s", EnvLockIndex: "x"},
		{EnvKey: "k", EnvSession: "s", EnvLockIndex: "1", EnvModifyIndex: "-1"},
	} {
		if _, err := SequencerFromEnv(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("SequencerFromEnv(%v) accepted", bad)
		}
	}
}
