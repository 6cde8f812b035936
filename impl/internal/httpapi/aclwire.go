package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/tenurekv/tenure/model"
)

// The ACL endpoints' JSON, in the field order and with the omissions of
// consul/api's ACLToken, ACLTokenListEntry, ACLPolicy, ACLPolicyListEntry
// and ACLRole (S87).

// redactedSecret replaces a token's secret for a caller without acl:write.
const redactedSecret = "<hidden>"

type aclLinkJSON struct {
	ID   string
	Name string
}

type aclServiceIdentityJSON struct {
	ServiceName string
	Datacenters []string `json:",omitempty"`
}

type aclNodeIdentityJSON struct {
	NodeName   string
	Datacenter string
}

// aclTokenJSON is a token as every token endpoint shows it; the list
// shows the same fields.
type aclTokenJSON struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []aclLinkJSON            `json:",omitempty"`
	Roles             []aclLinkJSON            `json:",omitempty"`
	ServiceIdentities []aclServiceIdentityJSON `json:",omitempty"`
	NodeIdentities    []aclNodeIdentityJSON    `json:",omitempty"`
	Local             bool
	CreateTime        time.Time
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
}

// aclBootstrapJSON is the bootstrap answer: the token with its secret
// again as ID, as Consul answers.
type aclBootstrapJSON struct {
	ID string
	aclTokenJSON
}

type aclPolicyJSON struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string `json:",omitempty"`
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

// aclPolicyListJSON is a policy in the list: no rules, and Datacenters
// always present (null when none), as Consul lists them.
type aclPolicyListJSON struct {
	ID          string
	Name        string
	Description string
	Datacenters []string
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

type aclRoleJSON struct {
	ID                string
	Name              string
	Description       string
	Policies          []aclLinkJSON            `json:",omitempty"`
	ServiceIdentities []aclServiceIdentityJSON `json:",omitempty"`
	NodeIdentities    []aclNodeIdentityJSON    `json:",omitempty"`
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
}

// policyLinks names linked policies as they are now; links to deleted
// ones are left out, as Consul leaves them out.
func policyLinks(s *model.State, ids []string) []aclLinkJSON {
	var out []aclLinkJSON
	for _, id := range ids {
		if p, ok := s.ACLPolicy(id); ok {
			out = append(out, aclLinkJSON{ID: id, Name: p.Name})
		}
	}
	return out
}

func roleLinks(s *model.State, ids []string) []aclLinkJSON {
	var out []aclLinkJSON
	for _, id := range ids {
		if r, ok := s.ACLRole(id); ok {
			out = append(out, aclLinkJSON{ID: id, Name: r.Name})
		}
	}
	return out
}

func serviceIdentitiesJSON(ids []model.ACLServiceIdentity) []aclServiceIdentityJSON {
	var out []aclServiceIdentityJSON
	for _, id := range ids {
		out = append(out, aclServiceIdentityJSON{ServiceName: id.ServiceName, Datacenters: id.Datacenters})
	}
	return out
}

func nodeIdentitiesJSON(ids []model.ACLNodeIdentity) []aclNodeIdentityJSON {
	var out []aclNodeIdentityJSON
	for _, id := range ids {
		out = append(out, aclNodeIdentityJSON{NodeName: id.NodeName, Datacenter: id.Datacenter})
	}
	return out
}

// toToken is t as the API shows it; redact hides its secret.
func toToken(s *model.State, t model.ACLToken, redact bool) aclTokenJSON {
	out := aclTokenJSON{AccessorID: t.AccessorID, SecretID: t.SecretID, Description: t.Description,
		Policies: policyLinks(s, t.Policies), Roles: roleLinks(s, t.Roles),
		ServiceIdentities: serviceIdentitiesJSON(t.ServiceIdentities), NodeIdentities: nodeIdentitiesJSON(t.NodeIdentities),
		Local: t.Local, CreateTime: time.Unix(0, t.CreateTime).UTC(), Hash: tokenHash(t),
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
	if redact {
		out.SecretID = redactedSecret
	}
	return out
}

func toPolicy(p model.ACLPolicy) aclPolicyJSON {
	return aclPolicyJSON{ID: p.ID, Name: p.Name, Description: p.Description, Rules: p.Rules,
		Datacenters: p.Datacenters, Hash: policyHash(p), CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

func toPolicyListEntry(p model.ACLPolicy) aclPolicyListJSON {
	return aclPolicyListJSON{ID: p.ID, Name: p.Name, Description: p.Description, Datacenters: p.Datacenters,
		Hash: policyHash(p), CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

func toRole(s *model.State, r model.ACLRole) aclRoleJSON {
	return aclRoleJSON{ID: r.ID, Name: r.Name, Description: r.Description, Policies: policyLinks(s, r.Policies),
		ServiceIdentities: serviceIdentitiesJSON(r.ServiceIdentities), NodeIdentities: nodeIdentitiesJSON(r.NodeIdentities),
		Hash: roleHash(r), CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex}
}

// The Hash fields: a digest of what a record grants, which changes when
// it does. Consul's own digest is of its internal encoding; clients only
// compare hashes the same server gave, so tenure's is its own.
func digest(parts ...any) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			_ = binary.Write(&b, binary.LittleEndian, uint64(len(v)))
			b.WriteString(v)
		case []string:
			_ = binary.Write(&b, binary.LittleEndian, uint64(len(v)))
			for _, s := range v {
				_ = binary.Write(&b, binary.LittleEndian, uint64(len(s)))
				b.WriteString(s)
			}
		case bool:
			if v {
				b.WriteByte(1)
			} else {
				b.WriteByte(0)
			}
		default:
			// Identity lists: their JSON is canonical enough.
			data, _ := json.Marshal(v)
			_ = binary.Write(&b, binary.LittleEndian, uint64(len(data)))
			b.Write(data)
		}
	}
	sum := sha256.Sum256(b.Bytes())
	return sum[:]
}

func tokenHash(t model.ACLToken) []byte {
	return digest(t.Description, t.Policies, t.Roles, t.ServiceIdentities, t.NodeIdentities, t.Local)
}

func policyHash(p model.ACLPolicy) []byte {
	return digest(p.Name, p.Description, p.Rules, p.Datacenters)
}

func roleHash(r model.ACLRole) []byte {
	return digest(r.Name, r.Description, r.Policies, r.ServiceIdentities, r.NodeIdentities)
}

// The request bodies. Decoding refuses unknown fields, as Consul does, but
// takes every field consul/api sends back from a read (Hash, CreateTime,
// indexes), so a read-modify-write round trip works.

type aclTokenIn struct {
	Name              string
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []aclLinkJSON
	Roles             []aclLinkJSON
	ServiceIdentities []aclServiceIdentityJSON
	NodeIdentities    []aclNodeIdentityJSON
	TemplatedPolicies []json.RawMessage
	Local             bool
	AuthMethod        string
	ExpirationTime    *time.Time
	ExpirationTTL     json.RawMessage
	CreateTime        time.Time
	Hash              string
	CreateIndex       uint64
	ModifyIndex       uint64
}

type aclPolicyIn struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string
	Hash        string
	CreateIndex uint64
	ModifyIndex uint64
}

type aclRoleIn struct {
	ID                string
	Name              string
	Description       string
	Policies          []aclLinkJSON
	ServiceIdentities []aclServiceIdentityJSON
	NodeIdentities    []aclNodeIdentityJSON
	TemplatedPolicies []json.RawMessage
	Hash              string
	CreateIndex       uint64
	ModifyIndex       uint64
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// trailing data.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errTrailing
	}
	return nil
}

var errTrailing = jsonError("invalid character after top-level value")

type jsonError string

func (e jsonError) Error() string { return string(e) }
