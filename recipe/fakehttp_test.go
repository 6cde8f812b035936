package recipe

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/consul/api"
)

// handlerTransport answers requests in memory with h, so unit tests run
// inside a synctest bubble (no sockets, virtual time) and exercise the same
// injection point a simulator uses: api.Config.HttpClient.
type handlerTransport struct{ h http.HandlerFunc }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// fakeClient is a Client whose every request goes to h.
func fakeClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = "fake:8500"
	cfg.Token = ""
	cfg.HttpClient = &http.Client{Transport: handlerTransport{h}}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
