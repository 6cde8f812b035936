package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tenurekv/tenure/impl/agent"
)

// The services and checks a config file defines (service, services,
// check, checks). Each is checked against Consul's schema here, rewritten
// into the JSON a register body would carry, and decoded and validated by
// the agent's HTTP register path (agent.DecodeConfigDefinitions, then
// registration at start and on reload), so that there is one validator.

// registrations are the config keys whose blocks are registrations, by
// path; applyBlock hands them to collect instead of walking them.
var registrations = map[string]string{
	"service": "ServiceDefinition", "services": "ServiceDefinition",
	"check": "CheckDefinition", "checks": "CheckDefinition",
}

// isRegistrationKey says whether a schema path lies in a registration
// block, whose keys the register decoder reads rather than settings.
func isRegistrationKey(path string) bool {
	head, _, _ := strings.Cut(path, ".")
	_, ok := registrations[strings.TrimSuffix(head, "[]")]
	return ok
}

// collect adds the registration blocks v, at key path shown, to s.
func collect(s *settings, path string, v any, shown string) error {
	typ := registrations[path]
	into := &s.configServices
	if typ == "CheckDefinition" {
		into = &s.configChecks
	}
	list, err := asBlocks(v)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	for i, m := range list {
		prefix := shown + "."
		if strings.HasSuffix(path, "s") {
			prefix = fmt.Sprintf("%s[%d].", shown, i)
		}
		out, err := registerBody(consulSchema(), typ, m, false, prefix)
		if err != nil {
			return err
		}
		*into = append(*into, out)
	}
	return nil
}

// registerBody turns one config block of type typ into a register body:
// keys Consul does not know are refused with its message, keys become the
// register body's (snake_case spellings lose their underscores; a
// service's check's id is CheckID), HCL's block lists become objects. A
// map's own keys (meta, header) are kept as written.
func registerBody(sc *schema, typ string, raw map[string]any, inService bool, shown string) (map[string]any, error) {
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		f, ok := sc.field(typ, k)
		if !ok {
			return nil, fmt.Errorf("invalid config key %s", shown+k)
		}
		key := strings.ReplaceAll(f.name, "_", "")
		if inService && typ == "CheckDefinition" && key == "id" {
			key = "CheckID"
		}
		if v == nil {
			continue
		}
		var err error
		switch f.kind {
		case kindBlock:
			var m map[string]any
			if m, err = asMap(v); err == nil {
				v, err = registerBody(sc, f.typ, m, typ == "ServiceDefinition", shown+k+".")
			}
		case kindBlocks:
			var list []map[string]any
			if list, err = asBlocks(v); err == nil {
				blocks := make([]any, 0, len(list))
				for i, m := range list {
					b, berr := registerBody(sc, f.typ, m, typ == "ServiceDefinition", fmt.Sprintf("%s%s[%d].", shown, k, i))
					if berr != nil {
						err = berr
						break
					}
					blocks = append(blocks, b)
				}
				v = blocks
			}
		case kindMap:
			v, err = asMap(v)
		}
		if err != nil {
			if strings.HasPrefix(err.Error(), "invalid config key ") {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", shown+k, err)
		}
		out[key] = v
	}
	return out, nil
}

// configDefinitions decodes the config files' services and checks as the
// register endpoints decode their bodies.
func (s *settings) configDefinitions() (agent.ConfigDefinitions, error) {
	enc := func(list []map[string]any) ([][]byte, error) {
		out := make([][]byte, 0, len(list))
		for _, m := range list {
			b, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("config definition: %w", err)
			}
			out = append(out, b)
		}
		return out, nil
	}
	svcs, err := enc(s.configServices)
	if err != nil {
		return agent.ConfigDefinitions{}, err
	}
	chks, err := enc(s.configChecks)
	if err != nil {
		return agent.ConfigDefinitions{}, err
	}
	return agent.DecodeConfigDefinitions(svcs, chks)
}
