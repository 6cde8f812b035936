package httpapi

import (
	"net/http"
	"testing"
)

// FuzzCoordinateUpdate sends any body to the coordinate update: an allowed
// answer, a rejection changes nothing, and a stored coordinate reads back
// through the list without failing (S89).
func FuzzCoordinateUpdate(f *testing.F) {
	for _, s := range []string{
		`{"Node":"node-a","Coord":{"Vec":[0,0,0,0,0,0,0,0],"Error":1.5,"Adjustment":0,"Height":0.00001}}`,
		`{"Node":"node-a","Coord":{"Vec":[1e308,-1e308,0,0,0,0,0,0],"Height":1e308,"Adjustment":-1e308}}`,
		`{"Node":"ghost","Coord":{"Vec":[0,0,0,0,0,0,0,0]}}`,
		`{"Node":"node-a","Segment":"s","Coord":{"Vec":[0,0]}}`,
		`{"Node":"node-a","Coord":{"Vec":[]}}`, `{"Node":"node-a"}`, `{"Coord":{}}`, `{"Node":`, `null`, `[]`,
		`{"Node":"node-a","Coord":{"Vec":[NaN]}}`, `{"Datacenter":"dc2","Node":"node-a","Coord":{"Vec":[0,0,0,0,0,0,0,0]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, store := fuzzServer(t)
		before := store.Hash()
		rec := serve(h, http.MethodPut, "/v1/coordinate/update", body)
		changed := store.Hash() != before
		if rec.Code == http.StatusInternalServerError && !changed {
			return // another datacenter: Consul's 500, nothing changed
		}
		if err := handlerOutcome(rec.Code, changed); err != nil {
			t.Fatalf("%q: %v (answer %q)", body, err, rec.Body)
		}
		for _, p := range []string{"/v1/coordinate/nodes", "/v1/catalog/nodes?near=node-a", "/v1/health/service/x?near=_agent"} {
			if got := serve(h, http.MethodGet, p, nil); got.Code != http.StatusOK {
				t.Fatalf("%s after %q: %d %q", p, body, got.Code, got.Body)
			}
		}
	})
}
