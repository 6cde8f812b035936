package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl"
)

// maxConfigFile bounds one configuration file: agent configs are small.
const maxConfigFile = 1 << 20

// loadConfigFiles reads Consul agent configuration onto base from paths in
// the order given, as Consul's -config-file and -config-dir do: a file is
// read whatever its name when format ("json" or "hcl") is set, else it must
// end in .json or .hcl; a directory's files are read in name order, without
// descending, skipping (with a warning) those whose format is unknown.
// Every key Consul's agent accepts is accepted: the ones tenure honours
// (honoured) take effect, the others are warned about once each and
// ignored; a key Consul would refuse is an error with Consul's message.
func loadConfigFiles(base settings, paths []string, format string, warn func(string)) (settings, error) {
	if format != "" && format != "json" && format != "hcl" {
		return base, fmt.Errorf("-config-format must be either 'hcl' or 'json', not %q", format)
	}
	warned := map[string]bool{}
	once := func(msg string) {
		if !warned[msg] {
			warned[msg] = true
			warn(msg)
		}
	}
	var files []string
	for _, p := range paths {
		found, err := configFilesAt(p, format, once)
		if err != nil {
			return base, err
		}
		files = append(files, found...)
	}
	for _, p := range files {
		raw, err := readConfigFile(p, format)
		if err != nil {
			return base, err
		}
		if err := applyConfig(&base, raw, once); err != nil {
			return base, fmt.Errorf("failed to parse %s: %w", p, err) // Consul's wording
		}
	}
	return base, nil
}

// configFilesAt lists the config files path stands for: itself, or a
// directory's files in name order (symlinks followed, subdirectories not).
func configFilesAt(path, format string, warn func(string)) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config: Open failed on %s. %w", path, err)
	}
	if !fi.IsDir() {
		if configFormat(path, format) == "" {
			return nil, fmt.Errorf("file %s has unknown extension; must be .hcl or .json, or config format must be set", path)
		}
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("config: Readdir failed on %s. %w", path, err)
	}
	var files []string
	for _, e := range entries { // os.ReadDir sorts by name
		p := filepath.Join(path, e.Name())
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("config: Stat failed on %s. %w", p, err)
		}
		if info.IsDir() {
			continue
		}
		if configFormat(p, format) == "" {
			warn(fmt.Sprintf("skipping file %s, extension must be .hcl or .json, or config format must be set", p))
			continue
		}
		files = append(files, p)
	}
	return files, nil
}

// configFormat is the format a file is read in: the one given, else its
// extension's, else "" (not a config file).
func configFormat(path, format string) string {
	switch {
	case format != "":
		return format
	case strings.HasSuffix(path, ".json"):
		return "json"
	case strings.HasSuffix(path, ".hcl"):
		return "hcl"
	}
	return ""
}

func readConfigFile(path, format string) (map[string]any, error) {
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
	if len(data) == 0 {
		// Consul skips a file with no bytes at all, in either format (one
		// holding only whitespace is parsed, and is a JSON error).
		return out, nil
	}
	switch configFormat(path, format) {
	case "json":
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case "hcl":
		if err := hcl.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("file %s has unknown extension; must be .hcl or .json, or config format must be set", path)
	}
	return out, nil
}

// honoured are the config keys tenure acts on, by their path in Consul's
// schema (consulkeys.txt); every other key there is accepted with one
// warning and ignored.
var honoured = map[string]func(s *settings, v any, warn func(string)) error{
	"server":           func(s *settings, v any, _ func(string)) error { return asBool(v, &s.Server) },
	"bootstrap":        func(s *settings, v any, _ func(string)) error { return asBool(v, &s.Bootstrap) },
	"bootstrap_expect": func(s *settings, v any, _ func(string)) error { return asInt(v, &s.BootstrapExpect) },
	"node_name":        func(s *settings, v any, _ func(string)) error { return asString(v, &s.NodeName) },
	"node_id":          func(s *settings, v any, _ func(string)) error { return asString(v, &s.NodeID) },
	"node_meta": func(s *settings, v any, _ func(string)) error {
		m, err := asStringMap(v)
		if err == nil {
			s.NodeMeta = mergeMeta(s.NodeMeta, m)
		}
		return err
	},
	"data_dir":       func(s *settings, v any, _ func(string)) error { return asString(v, &s.DataDir) },
	"datacenter":     func(s *settings, v any, _ func(string)) error { return asString(v, &s.Datacenter) },
	"bind_addr":      func(s *settings, v any, _ func(string)) error { return asString(v, &s.BindAddr) },
	"advertise_addr": func(s *settings, v any, _ func(string)) error { return asString(v, &s.AdvertiseAddr) },
	"client_addr":    func(s *settings, v any, _ func(string)) error { return asString(v, &s.ClientAddr) },
	"encrypt":        func(s *settings, v any, _ func(string)) error { return asString(v, &s.Encrypt) },
	"log_level":      func(s *settings, v any, _ func(string)) error { return asString(v, &s.LogLevel) },
	"retry_join":     func(s *settings, v any, _ func(string)) error { return asStrings(v, &s.RetryJoin) },
	"start_join": func(s *settings, v any, warn func(string)) error {
		warn("The 'start_join' field is deprecated. Use the 'retry_join' field instead.")
		return asStrings(v, &s.RetryJoin)
	},
	"retry_interval":             func(s *settings, v any, _ func(string)) error { return asDuration(v, &s.RetryInterval) },
	"telemetry.disable_hostname": func(s *settings, v any, _ func(string)) error { return asBool(v, &s.DisableHostname) },
	"ports.http":                 func(s *settings, v any, _ func(string)) error { return asInt(v, &s.Ports.HTTP) },
	"ports.server":               func(s *settings, v any, _ func(string)) error { return asInt(v, &s.Ports.Server) },
	"ports.serf_lan":             func(s *settings, v any, _ func(string)) error { return asInt(v, &s.Ports.SerfLAN) },
	"enable_script_checks":       func(s *settings, v any, _ func(string)) error { return asBool(v, &s.EnableScriptChecks) },
	"enable_local_script_checks": func(s *settings, v any, _ func(string)) error {
		s.localScriptChecksSet = true
		return asBool(v, &s.EnableLocalScriptChecks)
	},
	"enable_debug": func(s *settings, v any, _ func(string)) error { return asBool(v, &s.EnableDebug) },
	"http_config.use_cache": func(s *settings, v any, _ func(string)) error {
		use := true
		err := asBool(v, &use)
		s.NoHTTPCache = !use
		return err
	},
	"check_update_interval": func(s *settings, v any, _ func(string)) error { return asDuration(v, &s.CheckUpdateInterval) },
	"disable_coordinates":   func(s *settings, v any, _ func(string)) error { return asBool(v, &s.Coordinates.Disable) },
	"sync_coordinate_interval_min": func(s *settings, v any, _ func(string)) error {
		return asDuration(v, &s.Coordinates.IntervalMin)
	},
	"sync_coordinate_rate_target": func(s *settings, v any, _ func(string)) error {
		return asFloat(v, &s.Coordinates.RateTarget)
	},
	"leave_on_terminate": func(s *settings, v any, _ func(string)) error {
		var b bool
		err := asBool(v, &b)
		s.LeaveOnTerm = &b
		return err
	},
	"skip_leave_on_interrupt": func(s *settings, v any, _ func(string)) error {
		var b bool
		err := asBool(v, &b)
		s.SkipLeaveOnInt = &b
		return err
	},
	"ports.https":             func(s *settings, v any, _ func(string)) error { return asInt(v, &s.Ports.HTTPS) },
	"encrypt_verify_incoming": func(s *settings, v any, _ func(string)) error { return asBool(v, &s.EncryptVerifyIncoming) },
	"encrypt_verify_outgoing": func(s *settings, v any, _ func(string)) error { return asBool(v, &s.EncryptVerifyOutgoing) },
	"disable_keyring_file":    func(s *settings, v any, _ func(string)) error { return asBool(v, &s.DisableKeyringFile) },
	"domain":                  func(s *settings, v any, _ func(string)) error { return asString(v, &s.Domain) },
}

// The tls stanza and its deprecated top-level keys (tlssettings.go).
func init() {
	for k, apply := range tlsHonoured() {
		honoured[k] = apply
	}
}

// ignoredKeyWarning is the one warning a config key tenure does not act
// on gets.
func ignoredKeyWarning(path string) string {
	return fmt.Sprintf("config key %q is not supported by tenure; ignored", path)
}

// applyConfig copies one file's settings onto s. It walks the file
// against Consul's schema: a key Consul does not know is an error with
// Consul's message; a key tenure honours is applied; any other is warned
// about (once per key, by warn's caller) and ignored.
func applyConfig(s *settings, raw map[string]any, warn func(string)) error {
	// A file's deprecated TLS keys yield to the keys it sets in the tls
	// stanza itself, then the file's stanza is laid over the earlier
	// files', as Consul does it.
	s.file = &tlsFile{}
	defer func() { s.file = nil }()
	if err := applyBlock(consulSchema(), s, rootType, raw, "", "", warn); err != nil {
		return err
	}
	s.TLS.merge(s.file.resolve())
	return nil
}

// applyBlock applies one block of type typ. path is the block's path in
// the schema (lists written name[]), shown the same as the file writes it
// (lists indexed), for Consul's error messages.
func applyBlock(sc *schema, s *settings, typ string, raw map[string]any, path, shown string, warn func(string)) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		f, ok := sc.field(typ, k)
		if !ok {
			return fmt.Errorf("invalid config key %s", shown+k)
		}
		if v == nil {
			continue // JSON null, which sdk/testutil writes for "segments": as absent
		}
		p := path + f.name
		if _, ok := registrations[p]; ok {
			if err := collect(s, p, v, shown+k); err != nil {
				return err
			}
			continue
		}
		switch apply := honoured[p]; {
		case apply != nil:
			if err := apply(s, v, warn); err != nil {
				return fmt.Errorf("%s: %w", shown+k, err)
			}
		case f.kind == kindBlock:
			m, err := asMap(v)
			if err != nil {
				return fmt.Errorf("%s: %w", shown+k, err)
			}
			if err := applyBlock(sc, s, f.typ, m, p+".", shown+k+".", warn); err != nil {
				return err
			}
		case f.kind == kindBlocks:
			list, err := asBlocks(v)
			if err != nil {
				return fmt.Errorf("%s: %w", shown+k, err)
			}
			for i, m := range list {
				if err := applyBlock(sc, s, f.typ, m, p+"[].", fmt.Sprintf("%s%s[%d].", shown, k, i), warn); err != nil {
					return err
				}
			}
		default:
			warn(ignoredKeyWarning(p))
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

// asBlocks accepts a list of blocks: a JSON array of objects, HCL's
// repeated blocks, or a single block.
func asBlocks(v any) ([]map[string]any, error) {
	switch x := v.(type) {
	case []map[string]any:
		return x, nil
	case map[string]any:
		return []map[string]any{x}, nil
	case []any:
		out := make([]map[string]any, 0, len(x))
		for _, item := range x {
			m, err := asMap(item)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of blocks, got %T", v)
}

// asDuration accepts a Go duration string ("5s").
func asDuration(v any, out *time.Duration) error {
	var str string
	if err := asString(v, &str); err != nil {
		return err
	}
	d, err := time.ParseDuration(str)
	if err != nil {
		return fmt.Errorf("want a duration: %w", err)
	}
	*out = d
	return nil
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

// asFloat accepts any number.
func asFloat(v any, out *float64) error {
	switch x := v.(type) {
	case float64:
		*out = x
	case int:
		*out = float64(x)
	case int64:
		*out = float64(x)
	default:
		return fmt.Errorf("want a number, got %v", v)
	}
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
