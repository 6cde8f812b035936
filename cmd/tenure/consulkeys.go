package main

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

// consulKeysText is Consul's agent config schema as data (consulkeys.txt
// says where it was read from). tenure refuses exactly the keys that are
// not in it, as Consul does, and warns about the ones it does not honour.
//
//go:embed consulkeys.txt
var consulKeysText string

// keyKind is what a config key holds.
type keyKind int

const (
	kindString  keyKind = iota
	kindBool            // true or false
	kindInt             // a whole number
	kindFloat           // a number
	kindStrings         // a list of strings
	kindMap             // an object whose keys are the user's own
	kindMaps            // a list of such objects
	kindBlock           // an object of a schema type
	kindBlocks          // a list of objects of a schema type
)

// schemaField is one key of a schema type.
type schemaField struct {
	name string
	kind keyKind
	typ  string // the block's type, for kindBlock and kindBlocks
}

// schema is Consul's config schema: each type's fields by name (aliases
// included, pointing at the canonical field).
type schema struct {
	types map[string]map[string]schemaField
	order map[string][]string // canonical field names, in file order
}

const rootType = "Config"

var consulSchema = sync.OnceValue(func() *schema {
	s, err := parseSchema(consulKeysText)
	if err != nil {
		panic(fmt.Sprintf("consulkeys.txt: %v", err)) // a build-time fact: the test catches it
	}
	return s
})

func parseSchema(text string) (*schema, error) {
	s := &schema{types: map[string]map[string]schemaField{}, order: map[string][]string{}}
	cur := ""
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.Fields(line)
		if words[0] == "type" {
			if len(words) != 2 || s.types[words[1]] != nil {
				return nil, fmt.Errorf("line %d: bad or repeated type line %q", n+1, line)
			}
			cur = words[1]
			s.types[cur] = map[string]schemaField{}
			continue
		}
		if cur == "" || len(words) < 2 || len(words) > 3 {
			return nil, fmt.Errorf("line %d: want \"name kind [alias=…]\" inside a type, got %q", n+1, line)
		}
		f := schemaField{name: words[0]}
		switch k := words[1]; k {
		case "string":
			f.kind = kindString
		case "bool":
			f.kind = kindBool
		case "int":
			f.kind = kindInt
		case "float":
			f.kind = kindFloat
		case "strings":
			f.kind = kindStrings
		case "map":
			f.kind = kindMap
		case "maps":
			f.kind = kindMaps
		default:
			f.kind, f.typ = kindBlock, k
			if t, ok := strings.CutPrefix(k, "[]"); ok {
				f.kind, f.typ = kindBlocks, t
			}
		}
		names := []string{f.name}
		if len(words) == 3 {
			aliases, ok := strings.CutPrefix(words[2], "alias=")
			if !ok {
				return nil, fmt.Errorf("line %d: unknown annotation %q", n+1, words[2])
			}
			names = append(names, strings.Split(aliases, ",")...)
		}
		for _, name := range names {
			if _, dup := s.types[cur][name]; dup {
				return nil, fmt.Errorf("line %d: %s.%s listed twice", n+1, cur, name)
			}
			s.types[cur][name] = f
		}
		s.order[cur] = append(s.order[cur], f.name)
	}
	for t, fields := range s.types {
		for _, f := range fields {
			if (f.kind == kindBlock || f.kind == kindBlocks) && s.types[f.typ] == nil {
				return nil, fmt.Errorf("%s.%s: no type %s", t, f.name, f.typ)
			}
		}
	}
	if s.types[rootType] == nil {
		return nil, fmt.Errorf("no type %s", rootType)
	}
	return s, nil
}

// field looks a key up in a type as Consul's decoder does: by name or
// alias, and failing that regardless of case.
func (s *schema) field(typ, key string) (schemaField, bool) {
	fields := s.types[typ]
	if f, ok := fields[key]; ok {
		return f, true
	}
	for name, f := range fields {
		if strings.EqualFold(name, key) {
			return f, true
		}
	}
	return schemaField{}, false
}

// schemaKey is one key of the schema: a field of a type, and the dotted
// path that reaches it first from the top level (a list of blocks is
// written name[]).
type schemaKey struct {
	typ, field string
	path       string
	kind       keyKind
}

// keys lists every key of the schema once, each under its shortest path,
// in a fixed order.
func (s *schema) keys() []schemaKey {
	var out []schemaKey
	seen := map[string]bool{rootType: true}
	type item struct{ typ, prefix string }
	queue := []item{{rootType, ""}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		for _, name := range s.order[it.typ] {
			f := s.types[it.typ][name]
			p := it.prefix + name
			out = append(out, schemaKey{typ: it.typ, field: name, path: p, kind: f.kind})
			if (f.kind == kindBlock || f.kind == kindBlocks) && !seen[f.typ] {
				seen[f.typ] = true
				if f.kind == kindBlocks {
					p += "[]"
				}
				queue = append(queue, item{f.typ, p + "."})
			}
		}
	}
	return out
}
