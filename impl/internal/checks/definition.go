package checks

import (
	"fmt"
	"net/http"
	"time"
)

// Check statuses as Consul spells them on the wire.
const (
	Passing  = "passing"
	Warning  = "warning"
	Critical = "critical"
)

// ValidStatus reports whether s is one of the three statuses a client may set.
func ValidStatus(s string) bool { return s == Passing || s == Warning || s == Critical }

// Limits and defaults of Consul's agent, fixed (not user-settable) there too
// except OutputMaxSize, which is the agent's check_output_max_size.
const (
	minInterval          = time.Second
	minDeregisterAfter   = time.Minute
	defaultOutputMaxSize = 4096
	defaultHTTPTimeout   = 10 * time.Second
	defaultTCPTimeout    = 10 * time.Second
	defaultScriptTimeout = 30 * time.Second
)

// Kind is a check's type string, as GET /v1/agent/checks reports it in Type.
type Kind string

// The kinds; only TTL, HTTP, TCP, Script and Docker run in tenure (see the package
// comment for why the others are refused).
const (
	kindNone      Kind = ""
	kindTTL       Kind = "ttl"
	kindHTTP      Kind = "http"
	kindH2Ping    Kind = "h2ping"
	kindTCP       Kind = "tcp"
	kindUDP       Kind = "udp"
	kindGRPC      Kind = "grpc"
	kindDocker    Kind = "docker"
	kindScript    Kind = "script"
	kindAlias     Kind = "alias"
	kindOSService Kind = "os_service"
)

// Definition is a check as a client registers it: the fields of Consul's
// check register body (and of a service's Check/Checks). Durations are
// already parsed.
type Definition struct {
	ID        string
	Name      string
	ServiceID string
	Notes     string
	Status    string
	Token     string

	TTL                            time.Duration
	Interval                       time.Duration
	Timeout                        time.Duration
	DeregisterCriticalServiceAfter time.Duration

	HTTP             string
	Method           string
	Header           map[string][]string
	Body             string
	DisableRedirects bool
	TLSServerName    string
	TLSSkipVerify    bool

	TCP       string
	TCPUseTLS bool

	Args []string // ScriptArgs

	SuccessBeforePassing   int
	FailuresBeforeWarning  int
	FailuresBeforeCritical int
	OutputMaxSize          int

	// DockerContainerID makes a script (Args) a docker check, run in that
	// container; Shell is decoded and unused, as in Consul, which runs Args.
	DockerContainerID string
	Shell             string

	// Decoded so that a client using them gets a precise refusal rather than
	// "unknown field"; none of these kinds runs in tenure.
	UDP          string
	GRPC         string
	GRPCUseTLS   bool
	H2PING       string
	H2PingUseTLS bool
	AliasNode    string
	AliasService string
	OSService    string
}

func (d *Definition) intervalBased() bool {
	return len(d.Args) > 0 || d.HTTP != "" || d.TCP != "" || d.UDP != "" ||
		d.GRPC != "" || d.H2PING != "" || d.OSService != ""
}

// Kind is the check's type, chosen by which field is set, first match wins
// in Consul's order. It is meaningful only for a definition that passed
// Validate.
func (d *Definition) Kind() Kind {
	iv := d.Interval > 0
	switch {
	case d.TTL > 0:
		return kindTTL
	case d.HTTP != "" && iv:
		return kindHTTP
	case d.H2PING != "" && iv:
		return kindH2Ping
	case d.TCP != "" && iv:
		return kindTCP
	case d.UDP != "" && iv:
		return kindUDP
	case d.GRPC != "" && iv:
		return kindGRPC
	case d.DockerContainerID != "" && len(d.Args) > 0 && iv:
		return kindDocker
	case len(d.Args) > 0 && iv:
		return kindScript
	case d.AliasService != "":
		return kindAlias
	case d.OSService != "" && iv:
		return kindOSService
	}
	return kindNone
}

// Validate is Consul's rule set for a check type, with its reasons, plus
// tenure's refusal of the kinds it does not run. The HTTP layer answers a
// non-nil error with 400 "Invalid check: <err>".
func (d *Definition) Validate() error {
	iv := d.intervalBased()
	alias := d.AliasService != ""
	switch {
	case d.Interval > 0 && d.TTL > 0:
		return reason("Interval and TTL cannot both be specified")
	case iv && d.Interval <= 0:
		return reason("Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks")
	case iv && alias:
		return reason("Interval cannot be set for Alias checks")
	case alias && d.TTL > 0:
		return reason("TTL must be not be set for Alias checks")
	case !iv && !alias && d.TTL <= 0:
		return reason("TTL must be > 0 for TTL checks")
	case d.OutputMaxSize < 0:
		return reason("MaxOutputMaxSize must be positive")
	case d.FailuresBeforeWarning > d.FailuresBeforeCritical:
		return reason("FailuresBeforeWarning can't be higher than FailuresBeforeCritical")
	}
	// The rules above leave every definition with some kind, so kindNone
	// cannot reach here.
	switch k := d.Kind(); k {
	case kindTTL, kindHTTP, kindTCP, kindScript, kindDocker:
		return nil
	default:
		return fmt.Errorf("%s checks are not supported by tenure", k)
	}
}

// reason is a refusal worded as Consul words it, capital letter included.
type reason string

func (r reason) Error() string { return string(r) }

// Source says where a definition came from; it decides which setting allows
// script checks.
type Source int

const (
	// Remote is a definition posted over HTTP.
	Remote Source = iota
	// Config is a definition from the agent's own configuration files.
	Config
)

// local is Config by its older name, kept for this package's tests.
const local = Config

// Policy is the agent configuration that registration depends on.
type Policy struct {
	EnableScriptChecks      bool // -enable-script-checks: HTTP and config files
	EnableLocalScriptChecks bool // -enable-local-script-checks: config files only
	outputMaxSize           int  // check_output_max_size; 0 means 4096
}

func (p Policy) outputMax() int {
	if p.outputMaxSize > 0 {
		return p.outputMaxSize
	}
	return defaultOutputMaxSize
}

// Error is a refusal with the HTTP status Consul answers it with.
type Error struct {
	Code   int
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// Preflight is what Consul's endpoint checks of a check register body
// before it resolves the request's token: a name, and a status it knows.
// The rest of Prepare comes after the token (SPEC S90).
func Preflight(d Definition) error {
	if d.Name == "" {
		return &Error{http.StatusBadRequest, "Missing check name"}
	}
	if d.Status != "" && !ValidStatus(d.Status) {
		return &Error{http.StatusBadRequest, "Bad check status"}
	}
	return nil
}

// Prepare checks an agent check register body as Consul's endpoint does, in
// its order, and returns the definition with defaults filled in. It never
// modifies d and has no side effects, so a refusal changes nothing. The
// caller still checks that ServiceID names a local service (404).
func Prepare(d Definition, src Source, p Policy) (Definition, error) {
	if err := Preflight(d); err != nil {
		return Definition{}, err
	}
	if err := d.Validate(); err != nil {
		return Definition{}, &Error{http.StatusBadRequest, "Invalid check: " + err.Error()}
	}
	if err := ScriptAllowed(&d, src, p); err != nil {
		return Definition{}, err
	}
	return Normalize(d, p), nil
}

// ScriptAllowed refuses a script check the agent's settings do not allow.
// A docker check runs a script too (in a container), and needs the same
// settings, as in Consul.
func ScriptAllowed(d *Definition, src Source, p Policy) error {
	if k := d.Kind(); k != kindScript && k != kindDocker {
		return nil
	}
	switch {
	case src == Remote && !p.EnableScriptChecks:
		return &Error{http.StatusInternalServerError,
			"Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true"}
	case src == local && !p.EnableScriptChecks && !p.EnableLocalScriptChecks:
		return &Error{http.StatusInternalServerError,
			"Scripts are disabled on this agent; to enable, configure 'enable_script_checks' or 'enable_local_script_checks' to true"}
	}
	return nil
}

// Normalize fills in Consul's defaults and clamps on a valid definition: ID
// from Name, Status critical, Interval at least one second, a non-zero
// DeregisterCriticalServiceAfter at least one minute, OutputMaxSize within
// the agent's cap, FailuresBeforeWarning from FailuresBeforeCritical. Maps
// and slices are copied so the result shares nothing with the input.
func Normalize(d Definition, p Policy) Definition {
	if d.ID == "" {
		d.ID = d.Name
	}
	if d.Status == "" {
		d.Status = Critical
	}
	if d.Interval > 0 && d.Interval < minInterval {
		d.Interval = minInterval
	}
	if d.DeregisterCriticalServiceAfter > 0 && d.DeregisterCriticalServiceAfter < minDeregisterAfter {
		d.DeregisterCriticalServiceAfter = minDeregisterAfter
	}
	if limit := p.outputMax(); d.OutputMaxSize == 0 || d.OutputMaxSize > limit {
		d.OutputMaxSize = limit
	}
	if d.FailuresBeforeWarning == 0 {
		d.FailuresBeforeWarning = d.FailuresBeforeCritical
	}
	if d.Header != nil {
		h := make(map[string][]string, len(d.Header))
		for k, v := range d.Header {
			h[k] = append([]string(nil), v...)
		}
		d.Header = h
	}
	d.Args = append([]string(nil), d.Args...)
	return d
}

// effectiveTimeout is the probe timeout: the check's own, or its kind's
// default.
func (d *Definition) effectiveTimeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	switch d.Kind() {
	case kindScript, kindDocker:
		return defaultScriptTimeout
	case kindTCP:
		return defaultTCPTimeout
	}
	return defaultHTTPTimeout
}
