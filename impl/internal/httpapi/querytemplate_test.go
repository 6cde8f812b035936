package httpapi

import (
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

func template(name, re string, removeEmpty bool, sv model.ServiceQuery) model.PreparedQuery {
	return model.PreparedQuery{ID: "t", Name: name, Service: sv,
		Template: model.QueryTemplate{Type: model.QueryTemplateNamePrefixMatch, Regexp: re, RemoveEmptyTags: removeEmpty}}
}

// A template renders every interpolated field for the name it is resolved
// for, with Consul's variables, and leaves the stored query as it was (S83).
func TestTemplateRender(t *testing.T) {
	q := template("geo-", `^geo-([a-z]+)-(.*)$`, true, model.ServiceQuery{
		Service:        "${match(1)}",
		Failover:       model.QueryFailover{Datacenters: []string{"${match(2)}"}, Targets: []model.QueryTarget{{Peer: "p-${match(1)}"}}},
		IgnoreCheckIDs: []string{"${name.full}"},
		Near:           "${agent.segment}",
		Tags:           []string{"${match(2)}", "x${match(7)}y", "${match(9)}", ""},
		NodeMeta:       map[string]string{"prefix": "${name.prefix}"},
		ServiceMeta:    map[string]string{"suffix": "${name.suffix}", "sum": "${1+2}"},
	})
	ct, err := compileTemplate(q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ct.render("geo-web-eu", "")
	if err != nil {
		t.Fatal(err)
	}
	sv := got.Service
	for _, c := range []struct{ what, got, want string }{
		{"Service", sv.Service, "web"},
		{"Failover datacenter", sv.Failover.Datacenters[0], "eu"},
		{"Failover target peer", sv.Failover.Targets[0].Peer, "p-web"},
		{"IgnoreCheckIDs", sv.IgnoreCheckIDs[0], "geo-web-eu"},
		{"Near", sv.Near, ""},
		{"Tags", strings.Join(sv.Tags, ","), "eu,xy"}, // empty tags removed
		{"NodeMeta", sv.NodeMeta["prefix"], "geo-"},
		{"ServiceMeta suffix", sv.ServiceMeta["suffix"], "web-eu"},
		{"ServiceMeta sum", sv.ServiceMeta["sum"], "3"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}
	if q.Service.Tags[0] != "${match(2)}" || q.Service.NodeMeta["prefix"] != "${name.prefix}" {
		t.Errorf("rendering wrote into the stored query: %+v", q.Service)
	}
	// name.suffix trims the prefix as written, so another case keeps it,
	// as in Consul.
	if got, _ := ct.render("GEO-web-eu", ""); got.Service.ServiceMeta["suffix"] != "GEO-web-eu" {
		t.Errorf("suffix of a name in another case: %q", got.Service.ServiceMeta["suffix"])
	}
}

// A field that renders to no string is refused as Consul refuses it.
func TestTemplateRenderErrors(t *testing.T) {
	for _, tc := range []struct {
		what string
		sv   model.ServiceQuery
		want string
	}{
		{"unknown variable", model.ServiceQuery{Service: "${nope}"}, "failed compiling template: Bad evaluation for '${nope}' in Service.Service: 1:3: unknown variable accessed: nope"},
		{"bad match argument", model.ServiceQuery{Service: `${match("a")}`}, `failed compiling template: Bad evaluation for '${match("a")}' in Service.Service`},
		{"unclosed", model.ServiceQuery{Service: "web", Near: "${"}, "failed compiling template: Bad format '${' in Service.Near"},
	} {
		if _, err := compileTemplate(template("x", "", false, tc.sv)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.what, err, tc.want)
		}
	}
}

// HIL panics on some input (a nil tree, here); safeEval turns the panic
// into an error.
func TestTemplatePanicIsAnError(t *testing.T) {
	if _, err := safeEval(nil, nil); err == nil {
		t.Fatal("evaluating a nil tree: want an error")
	}
}

// FuzzTemplate: no template and name make compiling or rendering panic,
// and a field without interpolation renders as written.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"${name.full}", "${match(1)}", "${", "$${x}", "${1/0}", `${match("x")}`, "${name.suffix}-${agent.segment}"} {
		f.Add(s, "geo-web", `^geo-(.*)$`)
	}
	f.Fuzz(func(t *testing.T, field, name, re string) {
		q := template("geo-", re, true, model.ServiceQuery{Service: field, Tags: []string{"plain", field}})
		ct, err := compileTemplate(q)
		if err != nil {
			return
		}
		got, err := ct.render(name, "")
		if err != nil {
			return
		}
		if len(got.Service.Tags) == 0 || got.Service.Tags[0] != "plain" {
			t.Fatalf("a plain tag rendered as %q", got.Service.Tags)
		}
	})
}
