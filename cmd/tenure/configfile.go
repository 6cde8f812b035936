package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl"
)

// maxConfigFile bounds one configuration file: agent configs are small.
const maxConfigFile = 1 << 20

// loadConfigFiles reads Consul agent configuration files in order (each
// directory's .json and .hcl files in name order), onto base. Keys tenure
// has no use for, because they configure subsystems it does not have, are
// warned about once each and ignored; a key Consul would not know either
// is an error, as in Consul.
func loadConfigFiles(base settings, files, dirs []string, warn func(string)) (settings, error) {
	var paths []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return base, fmt.Errorf("config-dir: %w", err)
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".json" || ext == ".hcl") {
				paths = append(paths, filepath.Join(d, e.Name()))
			}
		}
	}
	paths = append(paths, files...)
	warned := map[string]bool{}
	once := func(msg string) {
		if !warned[msg] {
			warned[msg] = true
			warn(msg)
		}
	}
	for _, p := range paths {
		raw, err := readConfigFile(p)
		if err != nil {
			return base, err
		}
		if err := applyConfig(&base, raw, once); err != nil {
			return base, fmt.Errorf("%s: %w", p, err)
		}
	}
	return base, nil
}

func readConfigFile(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, fmt.Errorf("config-file: %w", err)
	}
	if len(data) > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxConfigFile)
	}
	out := map[string]any{}
	switch filepath.Ext(path) {
	case ".json":
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case ".hcl":
		if err := hcl.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("%s: config files must end in .json or .hcl", path)
	}
	return out, nil
}

// unsupportedKeys are Consul agent settings for things tenure does not
// have (DNS, Connect, the UI, ACLs, TLS, services and checks defined in
// files, telemetry, WAN, …): accepted with one warning each and ignored.
var unsupportedKeys = []string{
	"acl", "acl_datacenter", "acl_default_policy", "acl_down_policy", "acl_master_token", "acl_token",
	"addresses", "advertise_addr_ipv4", "advertise_addr_ipv6", "advertise_addr_wan", "advertise_addr_wan_ipv4",
	"advertise_addr_wan_ipv6", "advertise_reconnect_timeout", "alt_domain", "audit", "auto_config",
	"auto_encrypt", "auto_reload_config", "autopilot", "bootstrap", "ca_file", "ca_path", "cert_file", "check",
	"checks", "cloud", "config_entries", "connect", "disable_anonymous_signature",
	"disable_coordinates", "disable_host_node_id", "disable_http_unprintable_char_filter",
	"disable_keyring_file", "disable_remote_exec", "disable_update_check", "discard_check_output",
	"discovery_max_stale", "dns_config", "domain", "enable_acl_replication", "enable_agent_tls_for_checks",
	"enable_central_service_config", "enable_syslog", "encrypt_verify_incoming", "encrypt_verify_outgoing", "experiments", "gossip_lan",
	"gossip_wan", "http_config", "key_file", "leave_on_terminate", "license_path", "limits", "log_file",
	"log_json", "log_rotate_bytes", "log_rotate_duration", "log_rotate_max_files", "node_id",
	"peering", "performance", "pid_file", "primary_datacenter", "primary_gateways", "raft_boltdb",
	"raft_logstore", "raft_protocol", "raft_snapshot_interval", "raft_snapshot_threshold",
	"raft_trailing_logs", "read_replica", "reconnect_timeout", "reconnect_timeout_wan", "recursors",
	"rejoin_after_leave", "reporting", "retry_interval_wan", "retry_join_wan", "retry_max", "retry_max_wan",
	"rpc", "segment", "segments", "serf_lan", "serf_lan_allowed_cidrs", "serf_wan", "serf_wan_allowed_cidrs",
	"server_name", "service", "services", "session_ttl_min", "skip_leave_on_interrupt", "start_join_wan",
	"syslog_facility", "telemetry", "tls", "translate_wan_addrs", "ui", "ui_config", "ui_content_path",
	"ui_dir", "unix_sockets", "verify_incoming", "verify_incoming_https", "verify_incoming_rpc",
	"verify_outgoing", "verify_server_hostname", "watches",
}

// portKeys are the keys of Consul's ports block; tenure uses three.
var unsupportedPorts = []string{"dns", "grpc", "grpc_tls", "https", "serf_wan", "sidecar_min_port",
	"sidecar_max_port", "expose_min_port", "expose_max_port"}

// applyConfig copies one file's settings onto s.
func applyConfig(s *settings, raw map[string]any, warn func(string)) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		var err error
		switch k {
		case "server":
			err = asBool(v, &s.Server)
		case "bootstrap_expect":
			err = asInt(v, &s.BootstrapExpect)
		case "node_name":
			err = asString(v, &s.NodeName)
		case "node_id":
			err = asString(v, &s.NodeID)
		case "node_meta":
			var m map[string]string
			if m, err = asStringMap(v); err == nil {
				s.NodeMeta = mergeMeta(s.NodeMeta, m)
			}
		case "data_dir":
			err = asString(v, &s.DataDir)
		case "datacenter":
			err = asString(v, &s.Datacenter)
		case "bind_addr":
			err = asString(v, &s.BindAddr)
		case "advertise_addr":
			err = asString(v, &s.AdvertiseAddr)
		case "client_addr":
			err = asString(v, &s.ClientAddr)
		case "encrypt":
			err = asString(v, &s.Encrypt)
		case "log_level":
			err = asString(v, &s.LogLevel)
		case "retry_join":
			err = asStrings(v, &s.RetryJoin)
		case "start_join":
			warn("start_join is deprecated and treated as retry_join")
			err = asStrings(v, &s.RetryJoin)
		case "retry_interval":
			var d string
			if err = asString(v, &d); err == nil {
				s.RetryInterval, err = time.ParseDuration(d)
			}
		case "ports":
			err = applyPorts(s, v, warn)
		case "enable_script_checks":
			err = asBool(v, &s.EnableScriptChecks)
		case "enable_local_script_checks":
			err = asBool(v, &s.EnableLocalScriptChecks)
			s.localScriptChecksSet = true
		case "enable_debug":
			err = asBool(v, &s.EnableDebug)
		case "check_update_interval":
			var d string
			if err = asString(v, &d); err == nil {
				s.CheckUpdateInterval, err = time.ParseDuration(d)
			}
		default:
			if !slices.Contains(unsupportedKeys, k) {
				return fmt.Errorf("invalid config key %s", k)
			}
			warn(fmt.Sprintf("config key %q configures something tenure does not have; ignored", k))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

func applyPorts(s *settings, v any, warn func(string)) error {
	m, err := asMap(v)
	if err != nil {
		return err
	}
	for k, pv := range m {
		switch k {
		case "http":
			err = asInt(pv, &s.Ports.HTTP)
		case "server":
			err = asInt(pv, &s.Ports.Server)
		case "serf_lan":
			err = asInt(pv, &s.Ports.SerfLAN)
		default:
			if !slices.Contains(unsupportedPorts, k) {
				return fmt.Errorf("invalid config key ports.%s", k)
			}
			warn(fmt.Sprintf("config key \"ports.%s\" configures something tenure does not have; ignored", k))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// asMap accepts a JSON object or HCL's list of one block.
func asMap(v any) (map[string]any, error) {
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case []map[string]any:
		out := map[string]any{}
		for _, m := range x {
			for k, v := range m {
				out[k] = v
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a block, got %T", v)
}

// asStringMap accepts a block whose values are all strings.
func asStringMap(v any) (map[string]string, error) {
	m, err := asMap(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, mv := range m {
		var str string
		if err := asString(mv, &str); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = str
	}
	return out, nil
}

// mergeMeta is base with over's keys set over it, as Consul merges a map
// setting from later config sources (later files, then flags).
func mergeMeta(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

func asBool(v any, out *bool) error {
	b, ok := v.(bool)
	if !ok {
		return fmt.Errorf("want true or false, got %v", v)
	}
	*out = b
	return nil
}

func asInt(v any, out *int) error {
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) {
			return fmt.Errorf("want a whole number, got %v", x)
		}
		*out = int(x)
	case int:
		*out = x
	case int64:
		*out = int(x)
	default:
		return fmt.Errorf("want a number, got %v", v)
	}
	return nil
}

func asString(v any, out *string) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %v", v)
	}
	*out = s
	return nil
}

func asStrings(v any, out *[]string) error {
	list, ok := v.([]any)
	if !ok {
		if s, isString := v.(string); isString {
			*out = append(*out, s)
			return nil
		}
		return errors.New("want a list of strings")
	}
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			return fmt.Errorf("want a list of strings, found %v", item)
		}
		*out = append(*out, strings.TrimSpace(s))
	}
	return nil
}
