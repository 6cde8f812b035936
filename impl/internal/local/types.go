package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/model"
)

// Weights is a service's DNS weights by health.
type Weights struct {
	Passing int
	Warning int
}

// Service is a service on the agent's node, in the shape of Consul's
// AgentService / NodeService (Service is the name).
type Service struct {
	ID                string
	Service           string
	Tags              []string
	Address           string
	Port              int
	Meta              map[string]string
	EnableTagOverride bool
	Weights           Weights
	// Kind, TaggedAddresses, Ports, SocketPath, Locality and Proxy go to
	// the catalog as registered (S74). Proxy is the configuration's
	// canonical JSON (catalogwire.Service.Details), "" for none.
	Kind            string
	TaggedAddresses map[string]model.ServiceAddress
	Ports           []model.ServicePort
	SocketPath      string
	Locality        *model.Locality
	Proxy           string
}

func (s Service) clone() Service {
	s.Tags = slices.Clone(s.Tags)
	s.Meta = maps.Clone(s.Meta)
	s.TaggedAddresses = maps.Clone(s.TaggedAddresses)
	s.Ports = slices.Clone(s.Ports)
	if s.Locality != nil {
		l := *s.Locality
		s.Locality = &l
	}
	return s
}

// same is the comparison anti-entropy uses to decide a catalog entry is
// already right.
func (s Service) same(o Service) bool {
	return s.ID == o.ID && s.Service == o.Service && slices.Equal(s.Tags, o.Tags) &&
		s.Address == o.Address && s.Port == o.Port && maps.Equal(s.Meta, o.Meta) &&
		s.EnableTagOverride == o.EnableTagOverride && s.Weights == o.Weights &&
		s.Kind == o.Kind && maps.Equal(s.TaggedAddresses, o.TaggedAddresses) &&
		slices.Equal(s.Ports, o.Ports) && s.SocketPath == o.SocketPath &&
		(s.Locality == nil) == (o.Locality == nil) && (s.Locality == nil || *s.Locality == *o.Locality) &&
		s.Proxy == o.Proxy
}

// DefaultPort is the port marked default among Ports, else Port (Consul's
// NodeService.DefaultPort).
func (s Service) DefaultPort() int {
	for _, p := range s.Ports {
		if p.Default {
			return p.Port
		}
	}
	return s.Port
}

// Check is a check's current state, in the shape of Consul's HealthCheck
// (and of GET /v1/agent/checks). Interval and Timeout are Go duration
// strings, empty when unset.
type Check struct {
	Node        string
	CheckID     string
	Name        string
	Status      string
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	ServiceTags []string
	Type        string
	Interval    string
	Timeout     string
}

func (c Check) clone() Check {
	c.ServiceTags = slices.Clone(c.ServiceTags)
	return c
}

// same compares what the catalog stores of a check; Node is the catalog's
// business.
func (c Check) same(o Check) bool {
	return c.CheckID == o.CheckID && c.Name == o.Name && c.Status == o.Status &&
		c.Notes == o.Notes && c.Output == o.Output && c.ServiceID == o.ServiceID &&
		c.ServiceName == o.ServiceName && slices.Equal(c.ServiceTags, o.ServiceTags) &&
		c.Type == o.Type && c.Interval == o.Interval && c.Timeout == o.Timeout
}

// ServiceDefinition is the body of PUT /v1/agent/service/register as tenure
// supports it.
type ServiceDefinition struct {
	Kind              string
	ID                string
	Name              string
	Tags              []string
	Address           string
	TaggedAddresses   map[string]model.ServiceAddress
	Port              int
	Ports             []model.ServicePort
	SocketPath        string
	Meta              map[string]string
	EnableTagOverride bool
	Weights           *Weights
	Locality          *model.Locality
	Proxy             *catalogwire.Proxy
	Token             string
	Check             *checks.Definition
	Checks            []checks.Definition

	unsupported []string // fields given that tenure refuses (Connect)
}

// Wire is the service as a catalog register carries it (for validation,
// limits and the stored form of its proxy configuration).
func (d ServiceDefinition) Wire() *catalogwire.Service {
	sv := &catalogwire.Service{Kind: d.Kind, ID: d.ID, Service: d.Name, Tags: d.Tags, Address: d.Address,
		TaggedAddresses: d.TaggedAddresses, Port: d.Port, Ports: d.Ports, SocketPath: d.SocketPath, Meta: d.Meta,
		EnableTagOverride: d.EnableTagOverride, Locality: d.Locality, Proxy: d.Proxy}
	if d.Weights != nil {
		sv.Weights = &model.Weights{Passing: d.Weights.Passing, Warning: d.Weights.Warning}
	}
	return sv
}

// DecodeService parses a service register body strictly (an unknown field
// is an error, answered 400 "Request decode failed: <err>"), with keys
// matched case-insensitively. Connect decodes, and the Agent refuses a
// registration that sets it: its sidecar and native flag are Connect's.
func DecodeService(data []byte) (ServiceDefinition, error) {
	var d ServiceDefinition
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return d, err
	}
	if tok == nil {
		return d, nil
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return d, fmt.Errorf("json: cannot unmarshal %v into a service definition", tok)
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return d, err
		}
		key, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return d, err
		}
		null := string(raw) == "null"
		var ferr error
		switch strings.ToLower(key) {
		case "id":
			ferr = json.Unmarshal(raw, &d.ID)
		case "name":
			ferr = json.Unmarshal(raw, &d.Name)
		case "tags":
			ferr = json.Unmarshal(raw, &d.Tags)
		case "address":
			ferr = json.Unmarshal(raw, &d.Address)
		case "port":
			ferr = json.Unmarshal(raw, &d.Port)
		case "meta":
			ferr = json.Unmarshal(raw, &d.Meta)
		case "enabletagoverride", "enable_tag_override":
			ferr = json.Unmarshal(raw, &d.EnableTagOverride)
		case "weights":
			ferr = json.Unmarshal(raw, &d.Weights)
		case "token":
			ferr = json.Unmarshal(raw, &d.Token)
		case "check":
			if !null {
				var c checks.Definition
				if c, ferr = checks.DecodeServiceCheck(raw); ferr == nil && !isEmptyCheck(c) {
					d.Check = &c
				}
			}
		case "checks":
			var list []json.RawMessage
			if ferr = json.Unmarshal(raw, &list); ferr != nil {
				break
			}
			for _, r := range list {
				if string(r) == "null" {
					continue
				}
				c, err := checks.DecodeServiceCheck(r)
				if err != nil {
					ferr = err
					break
				}
				d.Checks = append(d.Checks, c)
			}
		case "kind":
			ferr = json.Unmarshal(raw, &d.Kind)
		case "taggedaddresses", "tagged_addresses":
			// Consul takes the snake_case map only when the other is empty.
			var m map[string]model.ServiceAddress
			if ferr = json.Unmarshal(raw, &m); ferr == nil && (len(d.TaggedAddresses) == 0 || strings.ToLower(key) == "taggedaddresses") && len(m) > 0 {
				d.TaggedAddresses = m
			}
		case "ports":
			ferr = json.Unmarshal(raw, &d.Ports)
		case "socketpath", "socket_path":
			ferr = json.Unmarshal(raw, &d.SocketPath)
		case "locality":
			ferr = json.Unmarshal(raw, &d.Locality)
		case "proxy":
			ferr = json.Unmarshal(raw, &d.Proxy)
		case "namespace", "partition", "ai":
			// Accepted and ignored: Enterprise tenancy, and the AI role
			// block of newer clients.
		case "connect":
			if !null && string(raw) != "{}" {
				d.unsupported = append(d.unsupported, key)
			}
		default:
			return d, fmt.Errorf("json: unknown field %q", key)
		}
		if ferr != nil {
			return d, fmt.Errorf("field %q: %w", key, ferr)
		}
	}
	if _, err := dec.Token(); err != nil {
		return d, err
	}
	return d, nil
}

// isEmptyCheck is Consul's rule that a service's "Check": {} means no check.
func isEmptyCheck(c checks.Definition) bool {
	return c.ID == "" && c.Name == "" && c.TTL == 0 && c.Interval == 0 && c.HTTP == "" &&
		c.TCP == "" && len(c.Args) == 0 && c.UDP == "" && c.GRPC == "" && c.H2PING == "" &&
		c.AliasService == "" && c.OSService == "" && c.DockerContainerID == "" && c.Status == ""
}
