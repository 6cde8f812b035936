package lockcmd

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestParseRejectsBadFlags: each bad value is refused with its own reason,
// and each value at the edge of its range is accepted.
func TestParseRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" means accepted
	}{
		{[]string{"-n", "0", "p", "true"}, "limit must be positive"},
		{[]string{"-n", "1", "p", "true"}, ""},
		{[]string{"p"}, "key prefix and child command"},
		{[]string{"-timeout", "-1s", "p", "true"}, "timeout must not be negative"},
		{[]string{"-timeout", "0s", "p", "true"}, ""},
		{[]string{"-ttl", "0s", "p", "true"}, "ttl must be positive"},
		{[]string{"-ttl", "1ns", "p", "true"}, ""},
		{[]string{"-lock-delay", "-1s", "p", "true"}, "lock-delay must not be negative"},
		{[]string{"-lock-delay", "0s", "p", "true"}, ""},
		{[]string{"-kill-grace", "-1s", "p", "true"}, "kill-grace must not be negative"},
		{[]string{"-kill-grace", "0s", "p", "true"}, ""},
		{[]string{"/", "true"}, "key prefix is empty"},
	} {
		o, err := parse(tc.args, io.Discard)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.want)
		case tc.want == "" && o.prefix != "p":
			t.Errorf("%q: prefix %q", tc.args, o.prefix)
		}
	}
}

// TestParseDefaults pins the defaults a user relies on: Consul's lock-delay,
// a name derived from the command, and the agent address flag.
func TestParseDefaults(t *testing.T) {
	o, err := parse([]string{"/jobs/a/", "echo", "hi"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.lockDelay != 15*time.Second || o.killGrace != DefaultKillGrace || DefaultKillGrace != 5*time.Second {
		t.Errorf("lock-delay %v, kill-grace %v", o.lockDelay, o.killGrace)
	}
	if o.prefix != "jobs/a" || o.name != "tenure lock for 'echo hi' at 'jobs/a'" {
		t.Errorf("prefix %q, name %q", o.prefix, o.name)
	}
	o, err = parse([]string{"-name", "mine", "-http-addr", "127.0.0.1:9", "p", "true"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.name != "mine" || o.lockConfig.Address != "127.0.0.1:9" {
		t.Errorf("name %q, address %q", o.name, o.lockConfig.Address)
	}
}
