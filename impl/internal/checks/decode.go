package checks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Decode parses an agent check register body (ID is "ID"). An unknown field
// is an error; the HTTP layer answers any error with 400 "Request decode
// failed: <err>".
func Decode(data []byte) (Definition, error) { return decode(data, "id") }

// DecodeServiceCheck parses one element of a service's Check or Checks,
// whose ID field is "CheckID" and which has no ServiceID of its own.
func DecodeServiceCheck(data []byte) (Definition, error) { return decode(data, "checkid") }

// aliases collects the snake_case spellings; the canonical field wins when
// both are given.
type aliases struct {
	args, scriptArgs             []string
	dcsa                         time.Duration
	docker, tlsServer, serviceID string
	tlsSkip                      bool
}

type field func(d *Definition, a *aliases, raw json.RawMessage) error

func str(p func(d *Definition) *string) field {
	return func(d *Definition, _ *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, p(d))
	}
}

func boolean(p func(d *Definition) *bool) field {
	return func(d *Definition, _ *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, p(d))
	}
}

func integer(p func(d *Definition) *int) field {
	return func(d *Definition, _ *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, p(d))
	}
}

func duration(p func(d *Definition) *time.Duration) field {
	return func(d *Definition, _ *aliases, raw json.RawMessage) error {
		v, err := parseDuration(raw)
		*p(d) = v
		return err
	}
}

// parseDuration takes a Go duration string or a number of nanoseconds, as
// Consul's check definition does; null is zero.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		return time.ParseDuration(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return time.Duration(n), nil
		}
		f, err := v.Float64()
		if err != nil {
			return 0, fmt.Errorf("bad duration %s: %w", v, err)
		}
		return time.Duration(f), nil
	default:
		return 0, fmt.Errorf("json: cannot use %s as a duration", raw)
	}
}

// fields maps each accepted key, lower-cased (keys match case-insensitively,
// as encoding/json does), to its setter. The ID key is added per context.
var fields = map[string]field{
	"name":      str(func(d *Definition) *string { return &d.Name }),
	"notes":     str(func(d *Definition) *string { return &d.Notes }),
	"status":    str(func(d *Definition) *string { return &d.Status }),
	"token":     str(func(d *Definition) *string { return &d.Token }),
	"namespace": func(*Definition, *aliases, json.RawMessage) error { return nil },
	"partition": func(*Definition, *aliases, json.RawMessage) error { return nil },

	"ttl":                            duration(func(d *Definition) *time.Duration { return &d.TTL }),
	"interval":                       duration(func(d *Definition) *time.Duration { return &d.Interval }),
	"timeout":                        duration(func(d *Definition) *time.Duration { return &d.Timeout }),
	"deregistercriticalserviceafter": duration(func(d *Definition) *time.Duration { return &d.DeregisterCriticalServiceAfter }),

	"http":             str(func(d *Definition) *string { return &d.HTTP }),
	"method":           str(func(d *Definition) *string { return &d.Method }),
	"body":             str(func(d *Definition) *string { return &d.Body }),
	"disableredirects": boolean(func(d *Definition) *bool { return &d.DisableRedirects }),
	"tlsservername":    str(func(d *Definition) *string { return &d.TLSServerName }),
	"tlsskipverify":    boolean(func(d *Definition) *bool { return &d.TLSSkipVerify }),
	"header": func(d *Definition, _ *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &d.Header)
	},
	"tcp":       str(func(d *Definition) *string { return &d.TCP }),
	"tcpusetls": boolean(func(d *Definition) *bool { return &d.TCPUseTLS }),
	"scriptargs": func(d *Definition, _ *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &d.Args)
	},

	"successbeforepassing":   integer(func(d *Definition) *int { return &d.SuccessBeforePassing }),
	"failuresbeforewarning":  integer(func(d *Definition) *int { return &d.FailuresBeforeWarning }),
	"failuresbeforecritical": integer(func(d *Definition) *int { return &d.FailuresBeforeCritical }),
	"outputmaxsize":          integer(func(d *Definition) *int { return &d.OutputMaxSize }),

	"udp":               str(func(d *Definition) *string { return &d.UDP }),
	"grpc":              str(func(d *Definition) *string { return &d.GRPC }),
	"grpcusetls":        boolean(func(d *Definition) *bool { return &d.GRPCUseTLS }),
	"h2ping":            str(func(d *Definition) *string { return &d.H2PING }),
	"h2pingusetls":      boolean(func(d *Definition) *bool { return &d.H2PingUseTLS }),
	"dockercontainerid": str(func(d *Definition) *string { return &d.DockerContainerID }),
	"shell":             str(func(d *Definition) *string { return &d.Shell }),
	"aliasnode":         str(func(d *Definition) *string { return &d.AliasNode }),
	"aliasservice":      str(func(d *Definition) *string { return &d.AliasService }),
	"osservice":         str(func(d *Definition) *string { return &d.OSService }),

	"args": func(_ *Definition, a *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &a.args)
	},
	"script_args": func(_ *Definition, a *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &a.scriptArgs)
	},
	"deregister_critical_service_after": func(_ *Definition, a *aliases, raw json.RawMessage) error {
		v, err := parseDuration(raw)
		a.dcsa = v
		return err
	},
	"docker_container_id": func(_ *Definition, a *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &a.docker)
	},
	"tls_server_name": func(_ *Definition, a *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &a.tlsServer)
	},
	"tls_skip_verify": func(_ *Definition, a *aliases, raw json.RawMessage) error {
		return json.Unmarshal(raw, &a.tlsSkip)
	},
}

var agentOnly = map[string]field{
	"id":         str(func(d *Definition) *string { return &d.ID }),
	"serviceid":  str(func(d *Definition) *string { return &d.ServiceID }),
	"service_id": func(_ *Definition, a *aliases, raw json.RawMessage) error { return json.Unmarshal(raw, &a.serviceID) },
}

var serviceOnly = map[string]field{
	"checkid": str(func(d *Definition) *string { return &d.ID }),
}

func decode(data []byte, idKey string) (Definition, error) {
	var d Definition
	var a aliases
	extra := serviceOnly
	if idKey == "id" {
		extra = agentOnly
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return Definition{}, err
	}
	if tok == nil { // a JSON null body decodes to the zero definition
		return d, nil
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return Definition{}, fmt.Errorf("json: cannot unmarshal %v into a check definition", tok)
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return Definition{}, err
		}
		key, _ := kt.(string) // inside an object the decoder only yields string keys
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Definition{}, err
		}
		lk := strings.ToLower(key)
		set, ok := fields[lk]
		if !ok {
			set, ok = extra[lk]
		}
		if !ok {
			return Definition{}, fmt.Errorf("json: unknown field %q", key)
		}
		if err := set(&d, &a, raw); err != nil {
			return Definition{}, fmt.Errorf("field %q: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return Definition{}, err
	}
	if len(d.Args) == 0 {
		d.Args = a.args
	}
	if len(d.Args) == 0 {
		d.Args = a.scriptArgs
	}
	if d.DeregisterCriticalServiceAfter == 0 {
		d.DeregisterCriticalServiceAfter = a.dcsa
	}
	if d.DockerContainerID == "" {
		d.DockerContainerID = a.docker
	}
	if d.TLSServerName == "" {
		d.TLSServerName = a.tlsServer
	}
	d.TLSSkipVerify = d.TLSSkipVerify || a.tlsSkip
	if d.ServiceID == "" {
		d.ServiceID = a.serviceID
	}
	return d, nil
}
