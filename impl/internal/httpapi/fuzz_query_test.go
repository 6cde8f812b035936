package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// parsePreparedQuery is a prepared-query create's request checking, as
// queryList runs it before raft.
func parsePreparedQuery(body []byte) (model.PreparedQuery, error) {
	b, err := decodeQuery(body)
	if err != nil {
		return model.PreparedQuery{}, err
	}
	pq := b.toModel()
	if me := model.ValidateQuery(pq); me != nil {
		return pq, me
	}
	return pq, nil
}

// preparedQueryProblem is the query decoder property: an accepted
// definition is within the limits and valid, and encoding it as a read
// shows it (queryJSON) then decoding again gives the same definition.
func preparedQueryProblem(parse func([]byte) (model.PreparedQuery, error), body []byte) error {
	pq, err := parse(body)
	if err != nil {
		return nil
	}
	sv := pq.Service
	if len(pq.Name) > maxNameLen || len(pq.Session) > maxNameLen || len(sv.Service) > maxNameLen ||
		len(sv.Tags) > maxTags || len(sv.IgnoreCheckIDs) > maxTags || len(sv.ServiceMeta) > maxTags || len(sv.NodeMeta) > maxTags {
		return fmt.Errorf("accepted a query over the limits: %+v", pq)
	}
	if me := model.ValidateQuery(pq); me != nil {
		return fmt.Errorf("accepted an invalid query: %v", me)
	}
	again, err := json.Marshal(toQuery(pq))
	if err != nil {
		return fmt.Errorf("re-encode: %v", err)
	}
	pq2, err := parse(again)
	if err != nil {
		return fmt.Errorf("re-encoded query %s refused: %v", again, err)
	}
	if !reflect.DeepEqual(pq, pq2) {
		return fmt.Errorf("round trip changed the query: %+v -> %+v", pq, pq2)
	}
	return nil
}

var preparedQuerySeeds = []string{
	``, `{}`, `null`, `[]`, `{`, `{"Name":"q"}`, `{"Name":"q","Service":{"Service":"web"}}`,
	`{"Session":"s1","Service":{"Service":"web","OnlyPassing":true,"Tags":["a","!b"],"IgnoreCheckIDs":["c"]}}`,
	`{"Name":"q","Token":"<hidden>","Service":{"Service":"web"}}`,
	`{"Name":"q","Service":{"Service":"web","Failover":{"NearestN":2,"Datacenters":["dc2"]}},"DNS":{"TTL":"10s"}}`,
	`{"Name":"q","Service":{"Service":"web","Failover":{"NearestN":-1}}}`,
	`{"Name":"q","Service":{"Service":"web","Failover":{"Targets":[{"Peer":"p"}]}}}`,
	`{"Name":"q","Service":{"Service":"web","ServiceMeta":{"k":"v"},"NodeMeta":{"a":"b"}},"DNS":{"TTL":"-1s"}}`,
	`{"Name":"q","Template":{"Type":"name_prefix_match"},"Service":{"Service":"web"}}`,
	`{"ID":"x","Name":"q","Service":{"Service":"web"}}`, `{"name":"q","service":{"service":"web"}}`,
}

func FuzzParsePreparedQuery(f *testing.F) {
	for _, s := range preparedQuerySeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"Name":"` + strings.Repeat("n", maxNameLen+1) + `","Service":{"Service":"web"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := preparedQueryProblem(parsePreparedQuery, body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

// FuzzQueryHandler sends any body to create, update or delete: an allowed
// answer, and a rejection changes nothing.
func FuzzQueryHandler(f *testing.F) {
	for i, s := range preparedQuerySeeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		h, store := fuzzServer(t)
		if _, err := store.Apply(model.Command{CreateSession: &model.CreateSession{ID: "s1", Node: "node-a"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Apply(model.Command{Query: &model.QueryOp{Op: model.QueryCreate,
			Query: model.PreparedQuery{ID: "q1", Name: "taken", Service: model.ServiceQuery{Service: "web"}}}}); err != nil {
			t.Fatal(err)
		}
		method, path := []string{post, put, del}[int(which)%3], "/v1/query/q1"
		if method == post {
			path = "/v1/query"
		}
		before := store.Hash()
		rec := serve(h, method, path, body)
		if err := handlerOutcome(rec.Code, store.Hash() != before); err != nil {
			t.Fatalf("%s %s %q: %v (answer %q)", method, path, body, err, rec.Body)
		}
	})
}

// The query property fails on a decoder that skips the limits or the
// validation, or loses a field.
func TestPreparedQueryPropertyCatchesBrokenDecoders(t *testing.T) {
	long := []byte(`{"Name":"` + strings.Repeat("n", maxNameLen+1) + `","Service":{"Service":"web"}}`)
	noLimits := func(body []byte) (model.PreparedQuery, error) {
		var b queryBody
		if err := json.Unmarshal(body, &b); err != nil {
			return model.PreparedQuery{}, errorf(http.StatusBadRequest, "%v", err)
		}
		return b.toModel(), nil
	}
	dropsTags := func(body []byte) (model.PreparedQuery, error) {
		pq, err := parsePreparedQuery(body)
		if len(pq.Service.Tags) > 0 {
			pq.Service.Tags = pq.Service.Tags[1:]
		}
		return pq, err
	}
	for name, fail := range map[string]func() error{
		"no limits":     func() error { return preparedQueryProblem(noLimits, long) },
		"no validation": func() error { return preparedQueryProblem(noLimits, []byte(preparedQuerySeeds[5])) },
		"drops a tag":   func() error { return preparedQueryProblem(dropsTags, []byte(preparedQuerySeeds[7])) },
	} {
		if fail() == nil {
			t.Errorf("%s: the property passed", name)
		}
	}
	for _, s := range preparedQuerySeeds {
		if err := preparedQueryProblem(parsePreparedQuery, []byte(s)); err != nil {
			t.Errorf("real decoder on %s: %v", s, err)
		}
	}
}
