// Package catalogwire is the JSON body of Consul's catalog register and
// deregister (structs.RegisterRequest and DeregisterRequest, as far as
// tenure reads them), one shape for everyone who speaks it: the HTTP API
// that decodes it, an agent's anti-entropy that sends it, and a server
// registering itself without gossip. Fields Consul has and tenure ignores
// (Datacenter, Connect, …) are left out; a decoder skips them.
package catalogwire

import (
	"encoding/json"

	"github.com/tenurekv/tenure/model"
)

// Register is the body of PUT /v1/catalog/register. A null or absent field
// decodes as its zero value, so a sender may leave out what it does not
// set.
type Register struct {
	// Datacenter, if set, must be the agent's: the catalog writes read
	// it from the body, not from ?dc, as Consul's do.
	Datacenter      string `json:",omitempty"`
	ID              string `json:",omitempty"`
	Node            string
	Address         string
	TaggedAddresses map[string]string `json:",omitempty"`
	NodeMeta        map[string]string `json:",omitempty"`
	// SkipNodeUpdate leaves an existing node's record as it is (S62).
	SkipNodeUpdate bool     `json:",omitempty"`
	Service        *Service `json:",omitempty"`
	Check          *Check   `json:",omitempty"`
	Checks         []*Check `json:",omitempty"`
}

// Service is structs.NodeService as tenure stores it: every field of a
// registration but Connect (S74).
type Service struct {
	Kind              string `json:",omitempty"`
	ID                string
	Service           string
	Tags              []string
	Address           string
	TaggedAddresses   map[string]model.ServiceAddress `json:",omitempty"`
	Port              int
	Ports             []model.ServicePort `json:",omitempty"`
	SocketPath        string              `json:",omitempty"`
	Meta              map[string]string
	Weights           *model.Weights  `json:",omitempty"`
	EnableTagOverride bool            `json:",omitempty"`
	Locality          *model.Locality `json:",omitempty"`
	Proxy             *Proxy          `json:",omitempty"`
}

// Check is the part of structs.HealthCheck tenure stores.
type Check struct {
	Node      string
	CheckID   string
	Name      string
	Status    model.Health
	Notes     string `json:",omitempty"`
	Output    string `json:",omitempty"`
	ServiceID string `json:",omitempty"`
	Type      string `json:",omitempty"`
	// Definition is how an agent runs the check, as Consul's
	// HealthCheckDefinition; the HTTP layer stores it as data.
	Definition json.RawMessage `json:",omitempty"`
}

// Deregister is the body of PUT /v1/catalog/deregister: the node, or one of
// its services or checks.
type Deregister struct {
	Datacenter string `json:",omitempty"` // as Register's
	Node       string
	CheckID    string `json:",omitempty"`
	ServiceID  string `json:",omitempty"`
}
