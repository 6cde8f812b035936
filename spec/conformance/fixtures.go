package conformance

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// Fixtures (fixtures*.go, one file per API area): every helper speaks
// Consul's HTTP API, fails the case on a transport error or an unexpected
// answer, and registers the cleanup of what it creates. Names are unique per
// run and case so cases can run in parallel. This file holds the transport
// and the assertions.

// Do sends one request and stops the case on a transport error.
func (t *caseT) Do(method, path string, body []byte) *resp {
	r, err := t.env.do(t.ctx, method, path, body)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// DoJSON sends v encoded as JSON.
func (t *caseT) DoJSON(method, path string, v any) *resp {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %s body: %v", path, err)
	}
	return t.Do(method, path, b)
}

// decode unmarshals r's body into v or stops the case.
func (t *caseT) decode(what string, r *resp, v any) {
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s: cannot decode %s: %v", what, r, err)
	}
}

// Equal records a failure unless got and want are deeply equal.
func (t *caseT) Equal(what string, got, want any) bool {
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %s, want %s", what, show(got), show(want))
		return false
	}
	return true
}

// show formats a value for a failure message: strings quoted, numbers in
// decimal, structs with field names.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprintf("%+v", v)
}

// Check records a failure with the message unless ok.
func (t *caseT) Check(ok bool, format string, args ...any) bool {
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

// Require stops the case with the message unless ok.
func (t *caseT) Require(ok bool, format string, args ...any) {
	if !ok {
		t.Fatalf(format, args...)
	}
}

// WaitFor polls cond every interval until it holds and returns the time it
// was first seen to hold; it stops the case after timeout.
func (t *caseT) WaitFor(what string, timeout, interval time.Duration, cond func() bool) time.Time {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		t.Sleep(interval)
	}
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }
