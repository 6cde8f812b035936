package catalogwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tenurekv/tenure/model"
)

// Service kinds Consul gives meaning to (structs.ServiceKind).
const (
	KindConnectProxy       = "connect-proxy"
	KindMeshGateway        = "mesh-gateway"
	KindTerminatingGateway = "terminating-gateway"
	KindIngressGateway     = "ingress-gateway"
	KindAPIGateway         = "api-gateway"
)

// IsGateway reports whether kind is one of Consul's gateway kinds.
func IsGateway(kind string) bool {
	switch kind {
	case KindMeshGateway, KindTerminatingGateway, KindIngressGateway, KindAPIGateway:
		return true
	}
	return false
}

// Proxy is structs.ConnectProxyConfig: the configuration of a connect proxy
// or gateway service. tenure runs no Connect; it stores the configuration
// in the catalog as this shape's JSON and shows it back (S74). Field names,
// omissions and the snake_case aliases a decoder accepts are Consul's.
type Proxy struct {
	EnvoyExtensions        []EnvoyExtension `json:",omitempty"`
	DestinationServiceName string           `json:",omitempty"`
	DestinationServiceID   string           `json:",omitempty"`
	LocalServiceAddress    string           `json:",omitempty"`
	LocalServicePort       int              `json:",omitempty"`
	LocalServiceSocketPath string           `json:",omitempty"`
	Mode                   string
	Config                 map[string]any `json:",omitempty"`
	Upstreams              []Upstream     `json:",omitempty"`
	MeshGateway            MeshGateway
	Expose                 Expose
	// TransparentProxy and AccessLogs are left out when zero, as Consul's
	// ConnectProxyConfig.MarshalJSON leaves them out.
	TransparentProxy *TransparentProxy `json:",omitempty"`
	AccessLogs       *AccessLogs       `json:",omitempty"`
}

// EnvoyExtension is structs.EnvoyExtension.
type EnvoyExtension struct {
	Name          string
	Required      bool
	Arguments     map[string]any
	ConsulVersion string
	EnvoyVersion  string
}

// Upstream is structs.Upstream.
type Upstream struct {
	DestinationType      string
	DestinationNamespace string `json:",omitempty"`
	DestinationPartition string `json:",omitempty"`
	DestinationPeer      string `json:",omitempty"`
	DestinationName      string
	Datacenter           string
	LocalBindAddress     string         `json:",omitempty"`
	LocalBindPort        int            `json:",omitempty"`
	LocalBindSocketPath  string         `json:",omitempty"`
	LocalBindSocketMode  string         `json:",omitempty"`
	Config               map[string]any `json:",omitempty"`
	MeshGateway          MeshGateway
	CentrallyConfigured  bool `json:",omitempty"`
}

// MeshGateway is structs.MeshGatewayConfig.
type MeshGateway struct {
	Mode string `json:",omitempty"`
}

// Expose is structs.ExposeConfig.
type Expose struct {
	Checks bool         `json:",omitempty"`
	Paths  []ExposePath `json:",omitempty"`
}

// ExposePath is structs.ExposePath.
type ExposePath struct {
	ListenerPort    int    `json:",omitempty"`
	Path            string `json:",omitempty"`
	LocalPathPort   int    `json:",omitempty"`
	Protocol        string `json:",omitempty"`
	ParsedFromCheck bool   `json:",omitempty"`
}

// TransparentProxy is structs.TransparentProxyConfig.
type TransparentProxy struct {
	OutboundListenerPort int  `json:",omitempty"`
	DialedDirectly       bool `json:",omitempty"`
}

// AccessLogs is structs.AccessLogsConfig.
type AccessLogs struct {
	Enabled             bool   `json:",omitempty"`
	DisableListenerLogs bool   `json:",omitempty"`
	Type                string `json:",omitempty"`
	Path                string `json:",omitempty"`
	JSONFormat          string `json:",omitempty"`
	TextFormat          string `json:",omitempty"`
}

// The snake_case spellings Consul's decoders accept beside each field's
// own name (the alias tags of structs.ConnectProxyConfig and its parts).
var (
	proxyAliases = map[string]string{
		"envoy_extensions": "EnvoyExtensions", "destination_service_name": "DestinationServiceName",
		"destination_service_id": "DestinationServiceID", "local_service_address": "LocalServiceAddress",
		"local_service_port": "LocalServicePort", "local_service_socket_path": "LocalServiceSocketPath",
		"mesh_gateway": "MeshGateway", "transparent_proxy": "TransparentProxy", "access_logs": "AccessLogs",
	}
	upstreamAliases = map[string]string{
		"destination_type": "DestinationType", "destination_namespace": "DestinationNamespace",
		"destination_partition": "DestinationPartition", "destination_peer": "DestinationPeer",
		"destination_name": "DestinationName", "local_bind_address": "LocalBindAddress",
		"local_bind_port": "LocalBindPort", "local_bind_socket_path": "LocalBindSocketPath",
		"local_bind_socket_mode": "LocalBindSocketMode", "mesh_gateway": "MeshGateway",
	}
	transparentAliases = map[string]string{"outbound_listener_port": "OutboundListenerPort", "dialed_directly": "DialedDirectly"}
	accessLogAliases   = map[string]string{"disable_listener_logs": "DisableListenerLogs", "json_format": "JSONFormat", "text_format": "TextFormat"}
	exposePathAliases  = map[string]string{"listener_port": "ListenerPort", "local_path_port": "LocalPathPort", "parsed_from_check": "ParsedFromCheck"}
)

// withAliases renames the snake_case keys of a JSON object to their field
// names where the object does not also carry the field under its own name
// (which wins, as in Consul's decoders). Anything but an object is left
// for the decoder to refuse.
func withAliases(data []byte, aliases map[string]string) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil || obj == nil {
		return data
	}
	changed := false
	for key, raw := range obj {
		field, ok := aliases[strings.ToLower(key)]
		if !ok {
			continue
		}
		delete(obj, key)
		changed = true
		has := false
		for k := range obj {
			if strings.EqualFold(k, field) {
				has = true
			}
		}
		if !has {
			obj[field] = raw
		}
	}
	if !changed {
		return data
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

// UnmarshalJSON decodes a proxy with Consul's snake_case aliases.
func (p *Proxy) UnmarshalJSON(data []byte) error {
	type plain Proxy
	return json.Unmarshal(withAliases(data, proxyAliases), (*plain)(p))
}

// UnmarshalJSON decodes an upstream with Consul's snake_case aliases.
func (u *Upstream) UnmarshalJSON(data []byte) error {
	type plain Upstream
	return json.Unmarshal(withAliases(data, upstreamAliases), (*plain)(u))
}

// UnmarshalJSON decodes with Consul's snake_case aliases.
func (t *TransparentProxy) UnmarshalJSON(data []byte) error {
	type plain TransparentProxy
	return json.Unmarshal(withAliases(data, transparentAliases), (*plain)(t))
}

// UnmarshalJSON decodes with Consul's snake_case aliases.
func (a *AccessLogs) UnmarshalJSON(data []byte) error {
	type plain AccessLogs
	return json.Unmarshal(withAliases(data, accessLogAliases), (*plain)(a))
}

// UnmarshalJSON decodes with Consul's snake_case aliases.
func (e *ExposePath) UnmarshalJSON(data []byte) error {
	type plain ExposePath
	return json.Unmarshal(withAliases(data, exposePathAliases), (*plain)(e))
}

// normalized drops the parts Consul leaves out of its JSON when zero.
func (p Proxy) normalized() Proxy {
	if p.TransparentProxy != nil && *p.TransparentProxy == (TransparentProxy{}) {
		p.TransparentProxy = nil
	}
	if p.AccessLogs != nil && *p.AccessLogs == (AccessLogs{}) {
		p.AccessLogs = nil
	}
	return p
}

// emptyProxy is how Consul shows the proxy configuration of a service that
// has none: {"Mode":"","MeshGateway":{},"Expose":{}}.
var emptyProxy = func() json.RawMessage {
	b, err := json.Marshal(Proxy{})
	if err != nil {
		panic(err)
	}
	return b
}()

// ProxyJSON is a stored proxy configuration as the catalog shows it: the
// stored JSON, or Consul's empty configuration when there is none.
func ProxyJSON(stored string) json.RawMessage {
	if stored == "" {
		return emptyProxy
	}
	return json.RawMessage(stored)
}

// DecodeProxy reads a stored proxy configuration back (for a sender that
// writes it again, as anti-entropy does).
func DecodeProxy(stored string) (*Proxy, error) {
	if stored == "" {
		return nil, nil
	}
	var p Proxy
	if err := json.Unmarshal([]byte(stored), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Details is the part of the service the model keeps without reading it,
// with the proxy configuration as its canonical JSON (Go's encoding of the
// Proxy shape, whose map keys are sorted), so that an unchanged
// registration compares equal and writes nothing. A zero configuration is
// stored as none.
func (s *Service) Details() (model.ServiceDetails, error) {
	d := model.ServiceDetails{Kind: s.Kind, TaggedAddresses: s.TaggedAddresses, Ports: s.Ports,
		SocketPath: s.SocketPath, EnableTagOverride: s.EnableTagOverride, Locality: s.Locality}
	if len(d.TaggedAddresses) == 0 {
		d.TaggedAddresses = nil
	}
	if len(d.Ports) == 0 {
		d.Ports = nil
	}
	// Consul's catalog keeps weights only when they are valid, else the
	// default (NodeService.ToServiceNode).
	if w := s.Weights; w != nil && WeightsProblem(*w) == "" && *w != (model.Weights{Passing: 1, Warning: 1}) {
		d.Weights = w
	}
	if s.Proxy != nil {
		b, err := json.Marshal(s.Proxy.normalized())
		if err != nil {
			return d, fmt.Errorf("encode proxy: %w", err)
		}
		if string(b) != string(emptyProxy) {
			d.Proxy = string(b)
		}
	}
	return d, nil
}

// WeightsProblem is structs.ValidateWeights: the reason w is invalid, ""
// if it is not. (Reasons, not errors: Consul's texts are capitalised.)
func WeightsProblem(w model.Weights) string {
	switch {
	case w.Passing < 1:
		return "Passing must be greater than 0"
	case w.Warning < 0:
		return "Warning must be greater or equal than 0"
	case w.Passing > 65535 || w.Warning > 65535:
		return "DNS Weight must be between 0 and 65535"
	}
	return ""
}

// Validate is structs.NodeService.Validate as far as tenure keeps the
// fields it checks (Connect's sidecar and native flags aside): the problems
// in Consul's order, nil if none.
func (s *Service) Validate() []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if l := s.Locality; l != nil && l.Region == "" && l.Zone != "" {
		add("zone cannot be set without region")
	}
	var p Proxy
	if s.Proxy != nil {
		p = *s.Proxy
	}
	if s.Kind == KindConnectProxy {
		if len(s.Ports) > 0 {
			add("Ports cannot be set for a %s", s.Kind)
		}
		if s.Port == 0 && s.SocketPath == "" {
			add("Port or SocketPath must be set for a %s", s.Kind)
		}
		if strings.TrimSpace(p.DestinationServiceName) == "" {
			add("Proxy.DestinationServiceName must be non-empty for Connect proxy services")
		}
		if p.DestinationServiceName == "*" {
			add("Proxy.DestinationServiceName must not be a wildcard for Connect proxy services")
		}
		seen := map[string]bool{}
		for _, u := range p.Upstreams {
			if err := u.validate(); err != nil {
				add("%s", err)
				continue
			}
			key := u.DestinationType + "/" + u.DestinationPeer + "/" + u.Datacenter + "/" + u.DestinationName
			if seen[key] {
				add("upstreams cannot contain duplicates of %s", key)
				continue
			}
			seen[key] = true
		}
		ports := map[int]bool{}
		for _, path := range p.Expose.Paths {
			if path.Path == "" {
				add("expose.paths: empty path exposed")
			}
			if ports[path.ListenerPort] {
				add("expose.paths: duplicate listener ports exposed")
			}
			ports[path.ListenerPort] = true
			if path.ListenerPort <= 0 || path.ListenerPort > 65535 {
				add("expose.paths: invalid listener port: %d", path.ListenerPort)
			}
			if proto := strings.ToLower(path.Protocol); proto != "" && proto != "http" && proto != "http2" {
				add("protocol '%s' not supported for path: %s, must be in: [http http2]", proto, path.Path)
			}
		}
	}
	if IsGateway(s.Kind) {
		if len(s.Ports) > 0 {
			add("Ports cannot be set for a %s", s.Kind)
		}
		if s.Port == 0 && s.Kind != KindIngressGateway && s.Kind != KindAPIGateway {
			add("Port must be non-zero for a %s", s.Kind)
		}
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"DestinationServiceName", p.DestinationServiceName != ""},
			{"DestinationServiceID", p.DestinationServiceID != ""},
			{"LocalServiceAddress", p.LocalServiceAddress != ""},
			{"LocalServicePort", p.LocalServicePort != 0},
			{"LocalServiceSocketPath", p.LocalServiceSocketPath != ""},
			{"Upstreams", len(p.Upstreams) != 0},
		} {
			if f.set {
				add("The Proxy.%s configuration is invalid for a %s", f.name, s.Kind)
			}
		}
	}
	if len(s.Ports) > 0 && s.Port != 0 {
		add("Cannot set both Port and Ports")
	}
	if p := portsProblem(s.Ports); p != "" {
		add("%s", p)
	}
	return errs
}

func (u Upstream) validate() error {
	switch {
	case u.DestinationType != "" && u.DestinationType != "service" && u.DestinationType != "prepared_query":
		return fmt.Errorf("unknown upstream destination type: %q", u.DestinationType)
	case u.DestinationName == "":
		return errors.New("upstream destination name cannot be empty")
	case u.DestinationName == "*" && !u.CentrallyConfigured:
		return errors.New("upstream destination name cannot be a wildcard")
	case u.DestinationPeer != "" && u.Datacenter != "":
		return errors.New("upstream cannot specify both destination peer and datacenter")
	case u.LocalBindPort == 0 && u.LocalBindSocketPath == "" && !u.CentrallyConfigured:
		return errors.New("upstream local bind port or local socket path must be defined and nonzero")
	case u.LocalBindPort != 0 && u.LocalBindSocketPath != "" && !u.CentrallyConfigured:
		return errors.New("only one of upstream local bind port or local socket path can be defined and nonzero")
	}
	return nil
}

// portsProblem is structs.ServicePorts.Validate: the reason ports are
// invalid, "" if they are not.
func portsProblem(ports []model.ServicePort) string {
	if len(ports) == 0 {
		return ""
	}
	seen := map[string]bool{}
	hasDefault := false
	for _, p := range ports {
		switch {
		case strings.TrimSpace(p.Name) == "":
			return "Ports.Name cannot be empty"
		case p.Port <= 0:
			return "Ports.Port must be greater than zero"
		case seen[p.Name]:
			return fmt.Sprintf("Ports.Name %q has to be unique", p.Name)
		case hasDefault && p.Default:
			return "Only one port can be marked as default"
		}
		seen[p.Name] = true
		hasDefault = hasDefault || p.Default
	}
	if !hasDefault {
		return "One of the Ports must be marked as Default"
	}
	return ""
}

// Reasons joins problems into one line, "; " between them: Consul lists
// them as go-multierror does, one per line, and tenure answers every
// refusal with a one-line reason (S39).
func Reasons(errs []string) string {
	return strings.Join(errs, "; ")
}
