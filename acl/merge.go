package acl

import (
	"maps"
	"slices"
)

// Merge combines the rules of every policy a token carries into one set, as
// Consul's policy merger does (S84): for each resource and name, the rule
// whose policy word outranks the others' (deny, write, list, read) wins, and
// a service rule's intentions merge on their own. The inputs are not
// changed; the result lists each kind sorted by name, so equal inputs merge
// to equal outputs.
func Merge(policies []*Rules) *Rules {
	var out Rules
	outLists := out.keyed()
	merged := make([]map[string]*Rule, len(outLists))
	for i := range merged {
		merged[i] = map[string]*Rule{}
	}
	outSingles := out.singletons()
	for _, p := range policies {
		for i, s := range p.singletons() {
			if outranks(*s.policy, *outSingles[i].policy) {
				*outSingles[i].policy = *s.policy
			}
		}
		for i, l := range p.keyed() {
			m := merged[i]
			for _, rule := range *l.rules {
				have, found := m[rule.Name]
				switch {
				case !found:
					c := *rule
					m[rule.Name] = &c
				case l.kind.resource == ResourceService:
					// Policy and intentions merge separately.
					if outranks(rule.Policy, have.Policy) {
						have.Policy = rule.Policy
					}
					if outranks(rule.Intentions, have.Intentions) {
						have.Intentions = rule.Intentions
					}
				case outranks(rule.Policy, have.Policy):
					c := *rule
					m[rule.Name] = &c
				}
			}
		}
	}
	for i, l := range outLists {
		for _, name := range slices.Sorted(maps.Keys(merged[i])) {
			*l.rules = append(*l.rules, merged[i][name])
		}
	}
	return &out
}
