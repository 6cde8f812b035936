package httpapi

import "net"

// The types ?filter expressions select on (S66). go-bexpr derives the
// selectors an expression may name from a type's exported fields, so each
// type here carries exactly the fields, names and kinds of the Consul type
// its endpoint filters (listed beside it), tenure's unstored ones (Connect,
// proxies, peers, partitions) left at their zero values. The type's own
// field list is the selector list: testdata/consulfilter.txt holds Consul
// 1.22.7's, and TestFilterTypesMatchConsul compares the two.
//
// Nested types are values, never pointers: go-bexpr v0.1.2 panics when a
// selector walks into a nil pointer (Consul answers `Connect.Native ==
// true` on an agent service without Connect by dropping the connection),
// and an absent Connect or Proxy is simply its zero value here.
//
// The unexported at is the entry's position in the answer: the filter
// keeps copies, and at says which entries they came from.

// nodeFilter is structs.Node (/v1/catalog/nodes).
type nodeFilter struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	Partition       string
	PeerName        string
	TaggedAddresses map[string]string
	Meta            map[string]string
	at              int
}

// serviceAddressFilter is structs.ServiceAddress, a service's tagged address.
type serviceAddressFilter struct {
	Address string
	Port    int
}

// weightsFilter is structs.Weights.
type weightsFilter struct {
	Passing int
	Warning int
}

// connectFilter is structs.ServiceConnect as filters see it.
type connectFilter struct {
	Native bool
}

// meshGatewayFilter is structs.MeshGatewayConfig.
type meshGatewayFilter struct {
	Mode string
}

// proxyFilter is structs.ConnectProxyConfig (and api's
// AgentServiceConnectProxyConfig, whose selectors are the same).
type proxyFilter struct {
	DestinationServiceName string
	DestinationServiceID   string
	LocalServiceAddress    string
	LocalServicePort       int
	LocalServiceSocketPath string
	Mode                   string
	TransparentProxy       struct {
		OutboundListenerPort int
		DialedDirectly       bool
	}
	Upstreams []struct {
		DestinationType      string
		DestinationNamespace string
		DestinationPartition string
		DestinationPeer      string
		DestinationName      string
		Datacenter           string
		LocalBindAddress     string
		LocalBindPort        int
		LocalBindSocketPath  string
		LocalBindSocketMode  string
		MeshGateway          meshGatewayFilter
	}
	MeshGateway meshGatewayFilter
	Expose      struct {
		Checks bool
		Paths  []struct {
			ListenerPort    int
			Path            string
			LocalPathPort   int
			Protocol        string
			ParsedFromCheck bool
		}
	}
	AccessLogs struct {
		Enabled             bool
		DisableListenerLogs bool
		Type                string
		Path                string
		JSONFormat          string
		TextFormat          string
	}
	EnvoyExtensions []struct {
		Name          string
		Required      bool
		ConsulVersion string
		EnvoyVersion  string
	}
}

// serviceNodeFilter is structs.ServiceNode (/v1/catalog/service/<s> and,
// per instance, /v1/catalog/services).
type serviceNodeFilter struct {
	ID                       string
	Node                     string
	Address                  string
	Datacenter               string
	TaggedAddresses          map[string]string
	NodeMeta                 map[string]string
	ServiceKind              string
	ServiceID                string
	ServiceName              string
	ServiceTags              []string
	ServiceAddress           string
	ServiceTaggedAddresses   map[string]serviceAddressFilter
	ServiceWeights           weightsFilter
	ServiceMeta              map[string]string
	ServicePort              int
	ServiceSocketPath        string
	ServiceEnableTagOverride bool
	ServiceProxy             proxyFilter
	ServiceConnect           connectFilter
	PeerName                 string
	at                       int
}

// nodeServiceFilter is structs.NodeService (/v1/catalog/node/<n>,
// /v1/catalog/node-services/<n>, and the Service of a health entry).
type nodeServiceFilter struct {
	Kind              string
	ID                string
	Service           string
	Tags              []string
	Address           string
	TaggedAddresses   map[string]serviceAddressFilter
	Meta              map[string]string
	Port              int
	SocketPath        string
	Weights           weightsFilter
	EnableTagOverride bool
	Proxy             proxyFilter
	Connect           connectFilter
	PeerName          string
	at                int
}

// healthCheckFilter is structs.HealthCheck (/v1/health/node/<n>,
// /v1/health/checks/<s>, /v1/health/state/<s>, /v1/agent/checks, and the
// Checks of a health entry).
type healthCheckFilter struct {
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
	ExposedPort int
	PeerName    string
	at          int
}

// checkServiceNodeFilter is structs.CheckServiceNode (/v1/health/service/<s>).
type checkServiceNodeFilter struct {
	Node    nodeFilter
	Service nodeServiceFilter
	Checks  []healthCheckFilter
	at      int
}

// agentServiceFilter is api.AgentService (/v1/agent/services).
type agentServiceFilter struct {
	Kind              string
	ID                string
	Service           string
	Tags              []string
	Meta              map[string]string
	Port              int
	Address           string
	SocketPath        string
	TaggedAddresses   map[string]serviceAddressFilter
	Weights           weightsFilter
	EnableTagOverride bool
	Proxy             proxyFilter
	Connect           connectFilter
	PeerName          string
	at                int
}

// memberFilter is serf.Member (/v1/agent/members).
type memberFilter struct {
	Name        string
	Addr        net.IP
	Port        uint16
	Tags        map[string]string
	Status      int
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
	at          int
}
