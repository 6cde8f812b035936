package agent_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestAnswersCompressedAsConsul: a client that accepts gzip gets a large
// answer compressed and a small one as it is, and every answer says it
// varies with Accept-Encoding, as Consul's do (CONSUL.md §25); the
// compressed body is the plain one.
func TestAnswersCompressedAsConsul(t *testing.T) {
	a := agenttest.StartDevAgent(t, nil)
	// A transport that leaves the encoding to the test.
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(path string, gz bool) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+a.HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp, b
	}
	for _, tc := range []struct {
		path       string
		gz, zipped bool
	}{
		{"/v1/agent/self", true, true},
		{"/v1/agent/self", false, false},
		{"/v1/status/leader", true, false},
	} {
		resp, body := get(tc.path, tc.gz)
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.zipped {
			t.Errorf("%s (accepts gzip: %v): compressed %v, want %v", tc.path, tc.gz, got, tc.zipped)
		}
		if resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s (accepts gzip: %v): Vary %q", tc.path, tc.gz, resp.Header.Get("Vary"))
		}
		var v any
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil {
			t.Errorf("%s (accepts gzip: %v): %d %.80q", tc.path, tc.gz, resp.StatusCode, body)
		}
	}
}
