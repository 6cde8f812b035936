package httpapi

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hil"
	"github.com/hashicorp/hil/ast"

	"github.com/tenurekv/tenure/model"
)

// Prepared-query templates (S83): the model stores a template and resolves
// a name to it; here its fields are interpolated for that name with HIL,
// the language Consul's templates use, over the same variables: name.full,
// name.prefix, name.suffix, agent.segment and match(N).

// compiledTemplate is a template with every field it interpolates parsed.
type compiledTemplate struct {
	q     model.PreparedQuery
	trees map[string]ast.Node // by field path, as Consul names them
	re    *regexp.Regexp
}

// compileTemplate parses q's fields and renders them once for q's own
// name, as Consul checks a template when it is written; the errors are
// Consul's.
func compileTemplate(q model.PreparedQuery) (*compiledTemplate, error) {
	// Consul's order: the type, each field's format, then the regexp.
	if me := model.CheckTemplate(model.QueryTemplate{Type: q.Template.Type}); me != nil {
		return nil, me
	}
	ct := &compiledTemplate{q: q, trees: map[string]ast.Node{}}
	err := templateFields(&ct.q.Service, func(path string, v *string) error {
		tree, err := safeParse(*v)
		if err != nil {
			return fmt.Errorf("failed compiling template: Bad format '%s' in Service%s: %w", *v, path, err)
		}
		ct.trees[path] = tree
		return nil
	})
	if err != nil {
		return nil, err
	}
	if me := model.CheckTemplate(q.Template); me != nil {
		return nil, me
	}
	if q.Template.Regexp != "" {
		// CheckTemplate compiled it already.
		ct.re = regexp.MustCompile(q.Template.Regexp)
	}
	if _, err := ct.render(q.Name, ""); err != nil {
		return nil, fmt.Errorf("failed compiling template: %w", err)
	}
	return ct, nil
}

// render is the template's query for name, asked by an agent in segment
// (always "" in tenure, which has no network segments).
func (ct *compiledTemplate) render(name, segment string) (model.PreparedQuery, error) {
	q := ct.q
	cloneServiceQuery(&q.Service)
	var matches []string
	if ct.re != nil {
		matches = ct.re.FindStringSubmatch(name)
	}
	match := ast.Function{
		ArgTypes:   []ast.Type{ast.TypeInt},
		ReturnType: ast.TypeString,
		Callback: func(in []any) (any, error) {
			if i, ok := in[0].(int); ok && i >= 0 && i < len(matches) {
				return matches[i], nil
			}
			return "", nil
		},
	}
	config := &hil.EvalConfig{GlobalScope: &ast.BasicScope{
		VarMap: map[string]ast.Variable{
			"name.full":     {Type: ast.TypeString, Value: name},
			"name.prefix":   {Type: ast.TypeString, Value: q.Name},
			"name.suffix":   {Type: ast.TypeString, Value: strings.TrimPrefix(name, q.Name)},
			"agent.segment": {Type: ast.TypeString, Value: segment},
		},
		FuncMap: map[string]ast.Function{"match": match},
	}}
	err := templateFields(&q.Service, func(path string, v *string) error {
		tree, ok := ct.trees[path]
		if !ok {
			return nil
		}
		res, err := safeEval(tree, config)
		if err != nil {
			return consulText("Bad evaluation for '%s' in Service%s: %v", *v, path, err)
		}
		s, ok := res.Value.(string)
		if res.Type != hil.TypeString || !ok {
			return consulText("Expected Service%s field to be a string, got %s", path, res.Type)
		}
		*v = s
		return nil
	})
	if err != nil {
		return model.PreparedQuery{}, err
	}
	if q.Template.RemoveEmptyTags {
		q.Service.Tags = slices.DeleteFunc(q.Service.Tags, func(t string) bool { return t == "" })
	}
	return q, nil
}

// templateFields calls fn on every string field of sv that a template
// interpolates, in Consul's order, with Consul's path for it; map values
// go in key order.
func templateFields(sv *model.ServiceQuery, fn func(path string, v *string) error) error {
	if err := fn(".Service", &sv.Service); err != nil {
		return err
	}
	for i := range sv.Failover.Datacenters {
		if err := fn(fmt.Sprintf(".Failover.Datacenters[%d]", i), &sv.Failover.Datacenters[i]); err != nil {
			return err
		}
	}
	for i := range sv.Failover.Targets {
		tg := &sv.Failover.Targets[i]
		if err := fn(fmt.Sprintf(".Failover.Targets[%d].Peer", i), &tg.Peer); err != nil {
			return err
		}
		if err := fn(fmt.Sprintf(".Failover.Targets[%d].Datacenter", i), &tg.Datacenter); err != nil {
			return err
		}
	}
	for i := range sv.IgnoreCheckIDs {
		if err := fn(fmt.Sprintf(".IgnoreCheckIDs[%d]", i), &sv.IgnoreCheckIDs[i]); err != nil {
			return err
		}
	}
	if err := fn(".Near", &sv.Near); err != nil {
		return err
	}
	for i := range sv.Tags {
		if err := fn(fmt.Sprintf(".Tags[%d]", i), &sv.Tags[i]); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		name string
		meta map[string]string
	}{{".NodeMeta", sv.NodeMeta}, {".ServiceMeta", sv.ServiceMeta}} {
		for _, k := range slices.Sorted(maps.Keys(m.meta)) {
			v := m.meta[k]
			if err := fn(fmt.Sprintf("%s[%s]", m.name, k), &v); err != nil {
				return err
			}
			m.meta[k] = v
		}
	}
	return nil
}

// cloneServiceQuery gives sv lists and maps of its own, so a render never
// writes into the stored query.
func cloneServiceQuery(sv *model.ServiceQuery) {
	sv.Failover.Datacenters = slices.Clone(sv.Failover.Datacenters)
	sv.Failover.Targets = slices.Clone(sv.Failover.Targets)
	sv.IgnoreCheckIDs = slices.Clone(sv.IgnoreCheckIDs)
	sv.Tags = slices.Clone(sv.Tags)
	sv.NodeMeta = maps.Clone(sv.NodeMeta)
	sv.ServiceMeta = maps.Clone(sv.ServiceMeta)
}

// consulText is an error worded as Consul words it, capital first.
func consulText(format string, args ...any) error {
	return &model.Error{Kind: model.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// safeParse and safeEval are HIL's Parse and Eval with a panic on odd
// input turned into an error: a template is client input.
func safeParse(s string) (tree ast.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parse failed: %v", r)
		}
	}()
	return hil.Parse(s)
}

func safeEval(tree ast.Node, config *hil.EvalConfig) (res hil.EvaluationResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("evaluation failed: %v", r)
		}
	}()
	return hil.Eval(tree, config)
}
