package httpapi

import (
	"math"
	"testing"
	"time"
)

// LockDelay is read by Consul's rules (S9, CONSUL.md §1).
func TestDecodeLockDelay(t *testing.T) {
	cases := []struct {
		body string
		want time.Duration
	}{
		{``, 15 * time.Second},
		{`{}`, 15 * time.Second},
		{`{"LockDelay":null}`, 15 * time.Second},
		{`{"LockDelay":15}`, 15 * time.Second},
		{`{"LockDelay":999}`, 999 * time.Second},
		{`{"LockDelay":1000}`, 1000},
		{`{"LockDelay":15000000000}`, 15 * time.Second},
		{`{"LockDelay":"500ns"}`, 500 * time.Second},
		{`{"LockDelay":"2s"}`, 2 * time.Second},
		{`{"lockdelay":"90s"}`, 90 * time.Second}, // above 60s: stored as sent (S5)
		{`{"LockDelay":"0s"}`, 0},
		{`{"LockDelay":true}`, 0},
		{`{"LockDelay":[1]}`, 0},
		{`{"LockDelay":-5}`, -5 * time.Second},
		{`{"LockDelay":-1e300}`, math.MinInt64},
		{`{"LockDelay":1e300}`, math.MaxInt64},
	}
	for _, tc := range cases {
		cs, err := decodeSessionCreate([]byte(tc.body), "n")
		if err != nil || cs.LockDelay != tc.want {
			t.Errorf("%s: LockDelay %v, %v; want %v", tc.body, cs.LockDelay, err, tc.want)
		}
	}
	for _, bad := range []string{`{"LockDelay":"15"}`, `{"LockDelay":"soon"}`, `{"TTL":1}`, `[]`, `{`} {
		if _, err := decodeSessionCreate([]byte(bad), "n"); err == nil {
			t.Errorf("%s: decoded without error", bad)
		}
	}
	// Consul decodes the first JSON value and ignores what follows.
	if cs, err := decodeSessionCreate([]byte(`{"Name":"x"} trailing`), "n"); err != nil || cs.Name != "x" {
		t.Errorf("trailing data: %+v %v", cs, err)
	}
}
