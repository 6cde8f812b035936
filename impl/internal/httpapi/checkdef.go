package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A check's Definition says how an agent runs it (HTTP URL, TCP address,
// interval, …). The catalog keeps it as data: the model stores the JSON
// below as a string and never reads it (S55, S68).

// checkDefinition is Consul's stored definition (structs.HealthCheckDefinition)
// in the shape Consul answers with: every field left out when empty, and
// the three durations first, as Go duration strings. TTL stays a number of
// nanoseconds, as Consul encodes it.
type checkDefinition struct {
	Interval                       string              `json:",omitempty"`
	OutputMaxSize                  uint                `json:",omitempty"`
	Timeout                        string              `json:",omitempty"`
	DeregisterCriticalServiceAfter string              `json:",omitempty"`
	HTTP                           string              `json:",omitempty"`
	TLSServerName                  string              `json:",omitempty"`
	TLSSkipVerify                  bool                `json:",omitempty"`
	Header                         map[string][]string `json:",omitempty"`
	Method                         string              `json:",omitempty"`
	Body                           string              `json:",omitempty"`
	DisableRedirects               bool                `json:",omitempty"`
	TCP                            string              `json:",omitempty"`
	TCPUseTLS                      bool                `json:",omitempty"`
	UDP                            string              `json:",omitempty"`
	H2PING                         string              `json:",omitempty"`
	OSService                      string              `json:",omitempty"`
	H2PingUseTLS                   bool                `json:",omitempty"`
	ScriptArgs                     []string            `json:",omitempty"`
	DockerContainerID              string              `json:",omitempty"`
	Shell                          string              `json:",omitempty"`
	GRPC                           string              `json:",omitempty"`
	GRPCUseTLS                     bool                `json:",omitempty"`
	AliasNode                      string              `json:",omitempty"`
	AliasService                   string              `json:",omitempty"`
	SessionName                    string              `json:",omitempty"`
	TTL                            time.Duration       `json:",omitempty"`
}

// definitionIn is a definition as clients send it (api.HealthCheckDefinition):
// the durations as Go duration strings or numbers of nanoseconds, under
// their own names or with a Duration suffix, which wins.
type definitionIn struct {
	checkDefinition
	Interval, Timeout, DeregisterCriticalServiceAfter                         flexDuration
	IntervalDuration, TimeoutDuration, DeregisterCriticalServiceAfterDuration flexDuration
	TTL                                                                       flexDuration
}

// flexDuration is a duration sent as "5s" or as nanoseconds.
type flexDuration struct {
	d   time.Duration
	set bool
}

func (f *flexDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) >= 2 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		f.d, f.set = d, true
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	f.d, f.set = time.Duration(v), true
	return nil
}

func (f flexDuration) or(g flexDuration) time.Duration {
	if g.set {
		return g.d
	}
	return f.d
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// storedDefinition turns a client's definition into what the catalog
// stores, "" for none. A txn's check op keeps only the fields Consul's txn
// endpoint copies; a catalog register keeps them all.
func storedDefinition(raw json.RawMessage, txnOp bool) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return "", nil
	}
	var in definitionIn
	// Lenient, as Consul's own decoder of this field is.
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("check definition: %w", err)
	}
	d := in.checkDefinition
	d.Interval = durationText(in.Interval.or(in.IntervalDuration))
	d.Timeout = durationText(in.Timeout.or(in.TimeoutDuration))
	d.DeregisterCriticalServiceAfter = durationText(in.DeregisterCriticalServiceAfter.or(in.DeregisterCriticalServiceAfterDuration))
	d.TTL = in.TTL.d
	if txnOp {
		d = checkDefinition{Interval: d.Interval, Timeout: d.Timeout,
			DeregisterCriticalServiceAfter: d.DeregisterCriticalServiceAfter, HTTP: d.HTTP,
			TLSServerName: d.TLSServerName, TLSSkipVerify: d.TLSSkipVerify, Header: d.Header,
			Method: d.Method, Body: d.Body, TCP: d.TCP, TCPUseTLS: d.TCPUseTLS, OSService: d.OSService,
			GRPC: d.GRPC, GRPCUseTLS: d.GRPCUseTLS}
	}
	out, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encode check definition: %w", err)
	}
	if string(out) == "{}" {
		return "", nil
	}
	if len(out) > maxOutputLen {
		return "", tooLong("Check definition", len(out), maxOutputLen)
	}
	return string(out), nil
}

// definitionType is the check type Consul's catalog register gives a check
// registered without one, from its definition (structs.CheckType.Type):
// most kinds count only with an interval.
func definitionType(stored string) string {
	if stored == "" {
		return ""
	}
	var d checkDefinition
	if err := json.Unmarshal([]byte(stored), &d); err != nil {
		return ""
	}
	interval := d.Interval != ""
	switch {
	case d.GRPC != "" && interval:
		return "grpc"
	case d.HTTP != "" && interval:
		return "http"
	case d.TTL > 0:
		return "ttl"
	case d.TCP != "" && interval:
		return "tcp"
	case d.UDP != "" && interval:
		return "udp"
	case d.AliasNode != "" || d.AliasService != "":
		return "alias"
	case len(d.ScriptArgs) > 0 && d.DockerContainerID != "" && interval:
		return "docker"
	case len(d.ScriptArgs) > 0:
		return "script"
	case d.H2PING != "" && interval:
		return "h2ping"
	case d.OSService != "" && interval:
		return "os_service"
	}
	return ""
}

// definitionJSON is a stored definition as answers show it: {} for none.
func definitionJSON(stored string) json.RawMessage {
	if stored == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(stored)
}

// decodeDefinition is storedDefinition with its refusals as answers: an
// over-long definition 413, one that does not decode 400 with prefix, the
// way its body's other decoding errors are worded.
func decodeDefinition(raw json.RawMessage, txnOp bool, prefix string) (string, error) {
	stored, err := storedDefinition(raw, txnOp)
	var ae *apiError
	switch {
	case err == nil:
		return stored, nil
	case errors.As(err, &ae):
		return "", ae
	}
	return "", errorf(http.StatusBadRequest, "%s: %v", prefix, err)
}
