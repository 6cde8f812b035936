package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-bexpr"
)

// filterSelectors renders the selectors go-bexpr derives from v's type in
// testdata/consulfilter.txt's form (its generator renders Consul's types
// the same way): "selector coercion operators", sorted.
func filterSelectors(v any) ([]string, error) {
	fields, err := bexpr.GenerateFieldConfigurations(v)
	if err != nil {
		return nil, fmt.Errorf("field configurations of %T: %w", v, err)
	}
	coercions := map[uintptr]string{}
	for name, fn := range map[string]bexpr.FieldValueCoercionFn{
		"string": bexpr.CoerceString, "bool": bexpr.CoerceBool,
		"int": bexpr.CoerceInt, "int8": bexpr.CoerceInt8, "int16": bexpr.CoerceInt16,
		"int32": bexpr.CoerceInt32, "int64": bexpr.CoerceInt64,
		"uint": bexpr.CoerceUint, "uint8": bexpr.CoerceUint8, "uint16": bexpr.CoerceUint16,
		"uint32": bexpr.CoerceUint32, "uint64": bexpr.CoerceUint64,
		"float32": bexpr.CoerceFloat32, "float64": bexpr.CoerceFloat64,
	} {
		coercions[reflect.ValueOf(fn).Pointer()] = name
	}
	var out []string
	fields.Walk(func(path bexpr.FieldPath, c *bexpr.FieldConfiguration) bool {
		parts := make([]string, len(path))
		for i, p := range path {
			parts[i] = string(p)
			if p == bexpr.FieldNameAny {
				parts[i] = "*"
			}
		}
		coerce := "-"
		if c.CoerceFn != nil {
			coerce = coercions[reflect.ValueOf(c.CoerceFn).Pointer()]
		}
		ops := make([]string, len(c.SupportedOperations))
		for i, op := range c.SupportedOperations {
			ops[i] = strings.ReplaceAll(op.String(), " ", "")
		}
		slices.Sort(ops)
		list := strings.Join(ops, ",")
		if list == "" {
			list = "-"
		}
		out = append(out, fmt.Sprintf("%s %s %s", strings.Join(parts, "."), coerce, list))
		return true
	})
	slices.Sort(out)
	return out, nil
}

// consulSelectors reads testdata/consulfilter.txt: Consul type → its lines.
func consulSelectors(t *testing.T) map[string][]string {
	t.Helper()
	fh, err := os.Open("testdata/consulfilter.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		typ, rest, _ := strings.Cut(line, " ")
		out[typ] = append(out[typ], rest)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// filterTypes pairs each Consul type with the type tenure filters in its
// place.
var filterTypes = map[string]any{
	"structs.Node":             nodeFilter{},
	"structs.ServiceNode":      serviceNodeFilter{},
	"structs.NodeService":      nodeServiceFilter{},
	"structs.HealthCheck":      healthCheckFilter{},
	"structs.CheckServiceNode": checkServiceNodeFilter{},
	"api.AgentService":         agentServiceFilter{},
	"serf.Member":              memberFilter{},
}

// selectorDiff says how got's selectors differ from want's, "" if not at all.
func selectorDiff(got, want []string) string {
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "\n  missing: %s", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "\n  extra:   %s", l)
		}
	}
	return b.String()
}

// Every filter type offers exactly the selectors of the Consul type it
// stands for, with the same coercions and operators, so an expression is
// accepted, refused and coerced as on Consul 1.22.7.
func TestFilterTypesMatchConsul(t *testing.T) {
	consul := consulSelectors(t)
	if len(consul) != len(filterTypes) {
		t.Fatalf("consulfilter.txt has %d types, filterTypes %d", len(consul), len(filterTypes))
	}
	for name, v := range filterTypes {
		got, err := filterSelectors(v)
		if err != nil {
			t.Fatal(err)
		}
		if d := selectorDiff(got, consul[name]); d != "" {
			t.Errorf("%T against %s:%s", v, name, d)
		}
	}
}

// The comparison catches a filter type that lacks a field, has one too
// many, or has one of another kind.
func TestFilterTypeComparisonCatchesDrift(t *testing.T) {
	want := consulSelectors(t)["structs.Node"]
	for name, v := range map[string]any{
		"missing PeerName": struct {
			ID, Node, Address, Datacenter, Partition string
			TaggedAddresses, Meta                    map[string]string
		}{},
		"extra CreateIndex": struct {
			ID, Node, Address, Datacenter, Partition, PeerName string
			TaggedAddresses, Meta                              map[string]string
			CreateIndex                                        uint64
		}{},
		"Meta as a list": struct {
			ID, Node, Address, Datacenter, Partition, PeerName string
			TaggedAddresses                                    map[string]string
			Meta                                               []string
		}{},
	} {
		got, err := filterSelectors(v)
		if err != nil {
			t.Fatal(err)
		}
		if selectorDiff(got, want) == "" {
			t.Errorf("%s: the comparison passed", name)
		}
	}
}

// unsafeFields lists the fields of v's type, at any depth, that go-bexpr
// cannot walk into safely: pointers, interfaces and the like.
func unsafeFields(v any) []string {
	var bad []string
	var walk func(path string, rt reflect.Type)
	walk = func(path string, rt reflect.Type) {
		switch rt.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
			bad = append(bad, path+" is a "+rt.Kind().String())
		case reflect.Struct:
			for i := range rt.NumField() {
				if fl := rt.Field(i); fl.IsExported() {
					walk(path+"."+fl.Name, fl.Type)
				}
			}
		case reflect.Slice, reflect.Array:
			walk(path+"[]", rt.Elem())
		case reflect.Map:
			walk(path+"[key]", rt.Key())
			walk(path+"[*]", rt.Elem())
		}
	}
	walk(reflect.TypeOf(v).Name(), reflect.TypeOf(v))
	return bad
}

// No filter type holds a pointer, an interface or anything else go-bexpr
// cannot walk into safely (see filtertypes.go); the check finds one nested
// in a list.
func TestFilterTypesHoldNoPointers(t *testing.T) {
	for name, v := range filterTypes {
		if bad := unsafeFields(v); len(bad) > 0 {
			t.Errorf("%s: %v", name, bad)
		}
	}
	type inner struct{ Connect *struct{ Native bool } }
	if bad := unsafeFields(struct{ Upstreams []inner }{}); len(bad) != 1 {
		t.Errorf("a pointer in a list element: found %v", bad)
	}
}

// go-bexpr v0.1.2 panics on a selector through a nil pointer (Consul's own
// agent/services does, for `Connect.Native == true`); execute turns such a
// panic into a refusal, so a type that let one through would not take the
// request down.
func TestFilterPanicIsARefusal(t *testing.T) {
	type connect struct{ Native bool }
	type withPointer struct {
		Service string
		Connect *connect
	}
	f, err := compileFilter("Connect.Native == true", []withPointer(nil))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := execute(f, []withPointer{{Service: "web"}})
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || kept != nil {
		t.Fatalf("a panicking filter: kept %v, error %v; want a 400", kept, err)
	}
	t.Logf("refused with: %v", err)
}

func filterOf(t *testing.T, expr string, target any) (*exprFilter, error) {
	t.Helper()
	return parseFilter(url.Values{"filter": {expr}}, target)
}

// wantFilterRefusal checks err is a 400 whose one-line reason starts as go-bexpr's
// and contains want.
func wantFilterRefusal(t *testing.T, what string, err error, want string) {
	t.Helper()
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != http.StatusBadRequest ||
		!strings.HasPrefix(ae.msg, filterPrefix) || !strings.Contains(ae.msg, want) || strings.Contains(ae.msg, "\n") {
		t.Fatalf("%s: got %v, want a one-line 400 %q…%q", what, err, filterPrefix, want)
	}
}

// An expression whose parse would run away, or that holds more
// comparisons than the bound, is refused before go-bexpr builds it.
func TestFilterBounds(t *testing.T) {
	// Each level of parentheses multiplies the parser's steps by four:
	// seven levels take about 1.9 million (a second or so), twelve take
	// minutes. The budget stops both after 2^20 steps.
	for _, depth := range []int{7, 12} {
		deep := strings.Repeat("(", depth) + "Node == a" + strings.Repeat(")", depth)
		_, err := filterOf(t, deep, onNodes)
		wantFilterRefusal(t, fmt.Sprintf("%d levels of parentheses", depth), err, "expression too complex")
	}

	many := func(n int) string {
		terms := make([]string, n)
		for i := range terms {
			terms[i] = fmt.Sprintf("Node == n%d", i)
		}
		return strings.Join(terms, " or ")
	}
	if _, err := filterOf(t, many(filterMaxMatches), onNodes); err != nil {
		t.Fatalf("%d comparisons: %v", filterMaxMatches, err)
	}
	_, err := filterOf(t, many(filterMaxMatches+1), onNodes)
	wantFilterRefusal(t, "one comparison too many", err, fmt.Sprintf("exceeds the limit (%d)", filterMaxMatches))
	if _, err := filterOf(t, strings.Repeat("(", 4)+"Node == a"+strings.Repeat(")", 4), onNodes); err != nil {
		t.Fatalf("4 levels of parentheses: %v", err)
	}
}

// No ?filter, or an empty one, filters nothing, as in Consul.
func TestNoFilter(t *testing.T) {
	for _, v := range []url.Values{{}, {"filter": {""}}} {
		if f, err := parseFilter(v, onNodes); f != nil || err != nil {
			t.Fatalf("%v: got %v %v, want no filter", v, f, err)
		}
	}
	items := []nodeJSON{{Node: "a"}, {Node: "b"}}
	if got, err := keep(nil, items, viewNode); err != nil || len(got) != 2 {
		t.Fatalf("nil filter: %v %v", got, err)
	}
}
