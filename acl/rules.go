package acl

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl"
)

// MaxRulesLen bounds a policy's rules text. Every request parses the rules of
// its token's policies (through a cache), so their size is work per request;
// Consul's own global-management rules are under 400 bytes.
const MaxRulesLen = 64 << 10

// Rule is one keyed rule: `key_prefix "a/" { policy = "write" }`. Name is
// the key (a key, node, service, session node, event or query prefix);
// Intentions is only read on service rules.
type Rule struct {
	Name       string `hcl:",key"`
	Policy     string `hcl:"policy"`
	Intentions string `hcl:"intentions"`
}

// Rules is one policy's rules as written, lists in source order. The
// singleton resources (acl, keyring, operator, mesh, peering) are one word
// each; "" means the policy says nothing about them.
type Rules struct {
	ACL             string  `hcl:"acl"`
	Agents          []*Rule `hcl:"agent"`
	AgentPrefixes   []*Rule `hcl:"agent_prefix"`
	Keys            []*Rule `hcl:"key"`
	KeyPrefixes     []*Rule `hcl:"key_prefix"`
	Nodes           []*Rule `hcl:"node"`
	NodePrefixes    []*Rule `hcl:"node_prefix"`
	Services        []*Rule `hcl:"service"`
	ServicePrefixes []*Rule `hcl:"service_prefix"`
	Sessions        []*Rule `hcl:"session"`
	SessionPrefixes []*Rule `hcl:"session_prefix"`
	Events          []*Rule `hcl:"event"`
	EventPrefixes   []*Rule `hcl:"event_prefix"`
	Queries         []*Rule `hcl:"query"`
	QueryPrefixes   []*Rule `hcl:"query_prefix"`
	Keyring         string  `hcl:"keyring"`
	Operator        string  `hcl:"operator"`
	Mesh            string  `hcl:"mesh"`
	Peering         string  `hcl:"peering"`
	// identity and identity_prefix are deprecated in Consul 1.22: decoded
	// (so their blocks are not errors) and then dropped, as Consul does.
	Identities       []*Rule `hcl:"identity"`
	IdentityPrefixes []*Rule `hcl:"identity_prefix"`
}

// Parse reads a policy's rules as a write must: HCL or JSON, an argument set
// twice in one block refused, every access level valid. Its errors are
// Consul's texts ("Failed to parse ACL rules: …", "Invalid key_prefix
// policy: …"). An empty text is a policy with no rules.
func Parse(text string) (*Rules, error) {
	return parse(text, true)
}

// ParseStored reads rules that were accepted when written, as Consul reads
// rules from its snapshot: a repeated argument is then no error (the last
// one counts), since the rules were stored before anyone checked. Resolution
// uses it; anything it refuses denies the request.
func ParseStored(text string) (*Rules, error) {
	return parse(text, false)
}

func parse(text string, strict bool) (r *Rules, err error) {
	if text == "" {
		return &Rules{}, nil
	}
	if len(text) > MaxRulesLen {
		return nil, consulf("Failed to parse ACL rules: %d bytes of rules exceed the limit of %d", len(text), MaxRulesLen)
	}
	defer func() {
		// hcl v1 is old code; a panic on odd input must be an error (and so
		// a refusal), never a crash of the server or an allowed request.
		if p := recover(); p != nil {
			r, err = nil, consulf("Failed to parse ACL rules: %v", p)
		}
	}()
	r = &Rules{}
	decode := hcl.Decode
	if strict {
		decode = hcl.DecodeErrorOnDuplicates
	}
	if err := decode(r, text); err != nil {
		return nil, consulf("Failed to parse ACL rules: %v", err)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// ruleKinds names each keyed list as a rule word and as the Go value Consul
// prints when it refuses a rule (%#v of its rule struct), so the texts
// match.
type ruleKind struct {
	word      string // "key_prefix"
	resource  Resource
	prefix    bool
	allowList bool
	// shape formats a refused rule as Consul's error shows it.
	shape func(r *Rule) string
}

func enterpriseShape(typ, nameField string) func(r *Rule) string {
	return func(r *Rule) string {
		return fmt.Sprintf("&acl.%s{%s:%q, Policy:%q, EnterpriseRule:acl.EnterpriseRule{}}", typ, nameField, r.Name, r.Policy)
	}
}

func plainShape(typ, nameField string) func(r *Rule) string {
	return func(r *Rule) string {
		return fmt.Sprintf("&acl.%s{%s:%q, Policy:%q}", typ, nameField, r.Name, r.Policy)
	}
}

func serviceShape(r *Rule) string {
	return fmt.Sprintf("&acl.ServiceRule{Name:%q, Policy:%q, Intentions:%q, EnterpriseRule:acl.EnterpriseRule{}}", r.Name, r.Policy, r.Intentions)
}

var (
	kindAgent         = ruleKind{"agent", ResourceAgent, false, false, plainShape("AgentRule", "Node")}
	kindAgentPrefix   = ruleKind{"agent_prefix", ResourceAgent, true, false, plainShape("AgentRule", "Node")}
	kindKey           = ruleKind{"key", ResourceKey, false, true, enterpriseShape("KeyRule", "Prefix")}
	kindKeyPrefix     = ruleKind{"key_prefix", ResourceKey, true, true, enterpriseShape("KeyRule", "Prefix")}
	kindNode          = ruleKind{"node", ResourceNode, false, false, enterpriseShape("NodeRule", "Name")}
	kindNodePrefix    = ruleKind{"node_prefix", ResourceNode, true, false, enterpriseShape("NodeRule", "Name")}
	kindService       = ruleKind{"service", ResourceService, false, false, serviceShape}
	kindServicePrefix = ruleKind{"service_prefix", ResourceService, true, false, serviceShape}
	kindSession       = ruleKind{"session", ResourceSession, false, false, plainShape("SessionRule", "Node")}
	kindSessionPrefix = ruleKind{"session_prefix", ResourceSession, true, false, plainShape("SessionRule", "Node")}
	kindEvent         = ruleKind{"event", ResourceEvent, false, false, plainShape("EventRule", "Event")}
	kindEventPrefix   = ruleKind{"event_prefix", ResourceEvent, true, false, plainShape("EventRule", "Event")}
	kindQuery         = ruleKind{"query", ResourceQuery, false, false, plainShape("PreparedQueryRule", "Prefix")}
	kindQueryPrefix   = ruleKind{"query_prefix", ResourceQuery, true, false, plainShape("PreparedQueryRule", "Prefix")}
)

// keyedList is one keyed rule list of a Rules with its kind.
type keyedList struct {
	kind  ruleKind
	rules *[]*Rule
}

// keyed lists r's keyed rule lists in Consul's validation order.
func (r *Rules) keyed() []keyedList {
	return []keyedList{
		{kindAgent, &r.Agents}, {kindAgentPrefix, &r.AgentPrefixes},
		{kindKey, &r.Keys}, {kindKeyPrefix, &r.KeyPrefixes},
		{kindNode, &r.Nodes}, {kindNodePrefix, &r.NodePrefixes},
		{kindService, &r.Services}, {kindServicePrefix, &r.ServicePrefixes},
		{kindSession, &r.Sessions}, {kindSessionPrefix, &r.SessionPrefixes},
		{kindEvent, &r.Events}, {kindEventPrefix, &r.EventPrefixes},
		{kindQuery, &r.Queries}, {kindQueryPrefix, &r.QueryPrefixes},
	}
}

// singleton is one one-word resource of a Rules.
type singleton struct {
	word     string
	resource Resource
	policy   *string
}

// singletons lists r's one-word resources in Consul's validation order
// (acl first, the rest after the keyed lists).
func (r *Rules) singletons() []singleton {
	return []singleton{
		{"acl", ResourceACL, &r.ACL}, {"keyring", ResourceKeyring, &r.Keyring},
		{"operator", ResourceOperator, &r.Operator}, {"mesh", ResourceMesh, &r.Mesh},
		{"peering", ResourcePeering, &r.Peering},
	}
}

// validate refuses an access level Consul does not know, in Consul's order,
// with its texts, and drops the deprecated identity rules.
func (r *Rules) validate() error {
	r.Identities, r.IdentityPrefixes = nil, nil
	single := r.singletons()
	if r.ACL != "" && !validPolicy(r.ACL, false) {
		return consulf("Invalid acl policy: %q", r.ACL)
	}
	for _, l := range r.keyed() {
		for _, rule := range *l.rules {
			if !validPolicy(rule.Policy, l.kind.allowList) {
				return consulf("Invalid %s policy: %s", l.kind.word, l.kind.shape(rule))
			}
			if l.kind.resource == ResourceService && rule.Intentions != "" && !validPolicy(rule.Intentions, false) {
				return consulf("Invalid %s intentions policy: %s", l.kind.word, l.kind.shape(rule))
			}
		}
	}
	for _, s := range single[1:] {
		if *s.policy != "" && !validPolicy(*s.policy, false) {
			return consulf("Invalid %s policy: %q", s.word, *s.policy)
		}
	}
	return nil
}

// String is a short description for logs and test failures.
func (r *Rules) String() string {
	var parts []string
	for _, s := range r.singletons() {
		if *s.policy != "" {
			parts = append(parts, fmt.Sprintf("%s=%s", s.word, *s.policy))
		}
	}
	for _, l := range r.keyed() {
		for _, rule := range *l.rules {
			parts = append(parts, fmt.Sprintf("%s %q=%s", l.kind.word, rule.Name, rule.Policy))
		}
	}
	return strings.Join(parts, "; ")
}
