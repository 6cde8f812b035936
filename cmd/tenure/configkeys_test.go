package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// honouredSamples is, for every key tenure honours, a value to set it to
// in a config file and what the settings must then show. The test below
// holds this table to honoured's keys, so a key cannot be honoured
// untested.
var honouredSamples = map[string]struct {
	value any
	took  func(s settings) bool
	// warning is the one warning the key itself gives, if any.
	warning string
}{
	"server":           {true, func(s settings) bool { return s.Server }, ""},
	"bootstrap":        {true, func(s settings) bool { return s.Bootstrap }, ""},
	"bootstrap_expect": {3, func(s settings) bool { return s.BootstrapExpect == 3 }, ""},
	"node_name":        {"from-file", func(s settings) bool { return s.NodeName == "from-file" }, ""},
	"node_id": {"0f0e0d0c-0b0a-0908-0706-050403020100",
		func(s settings) bool { return s.NodeID == "0f0e0d0c-0b0a-0908-0706-050403020100" }, ""},
	"node_meta":      {map[string]any{"rack": "r1"}, func(s settings) bool { return s.NodeMeta["rack"] == "r1" }, ""},
	"data_dir":       {"/var/lib/t", func(s settings) bool { return s.DataDir == "/var/lib/t" }, ""},
	"datacenter":     {"dc9", func(s settings) bool { return s.Datacenter == "dc9" }, ""},
	"bind_addr":      {"10.1.2.3", func(s settings) bool { return s.BindAddr == "10.1.2.3" }, ""},
	"advertise_addr": {"10.1.2.4", func(s settings) bool { return s.AdvertiseAddr == "10.1.2.4" }, ""},
	"client_addr":    {"0.0.0.0", func(s settings) bool { return s.ClientAddr == "0.0.0.0" }, ""},
	"encrypt": {"pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s=",
		func(s settings) bool { return s.Encrypt == "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s=" }, ""},
	"log_level":  {"debug", func(s settings) bool { return s.LogLevel == "debug" }, ""},
	"retry_join": {[]any{"10.0.0.9"}, func(s settings) bool { return slices.Equal(s.RetryJoin, []string{"10.0.0.9"}) }, ""},
	"start_join": {[]any{"10.0.0.8"}, func(s settings) bool { return slices.Equal(s.RetryJoin, []string{"10.0.0.8"}) },
		"The 'start_join' field is deprecated. Use the 'retry_join' field instead."},
	"retry_interval":       {"7s", func(s settings) bool { return s.RetryInterval == 7*time.Second }, ""},
	"ports.http":           {18500, func(s settings) bool { return s.Ports.HTTP == 18500 }, ""},
	"ports.server":         {18300, func(s settings) bool { return s.Ports.Server == 18300 }, ""},
	"ports.serf_lan":       {18301, func(s settings) bool { return s.Ports.SerfLAN == 18301 }, ""},
	"enable_script_checks": {true, func(s settings) bool { return s.EnableScriptChecks }, ""},
	"enable_local_script_checks": {true,
		func(s settings) bool { return s.EnableLocalScriptChecks && s.localScriptChecksSet }, ""},
	"enable_debug":          {true, func(s settings) bool { return s.EnableDebug }, ""},
	"http_config.use_cache": {false, func(s settings) bool { return s.NoHTTPCache }, ""},
	"check_update_interval": {"9s", func(s settings) bool { return s.CheckUpdateInterval == 9*time.Second }, ""},
	"disable_coordinates":   {true, func(s settings) bool { return s.Coordinates.Disable }, ""},
	"sync_coordinate_interval_min": {"20s",
		func(s settings) bool { return s.Coordinates.IntervalMin == 20*time.Second }, ""},
	"sync_coordinate_rate_target": {32, func(s settings) bool { return s.Coordinates.RateTarget == 32 }, ""},
	"leave_on_terminate":          {true, func(s settings) bool { return s.LeaveOnTerm != nil && *s.LeaveOnTerm }, ""},
	"skip_leave_on_interrupt": {false,
		func(s settings) bool { return s.SkipLeaveOnInt != nil && !*s.SkipLeaveOnInt }, ""},
	"telemetry.disable_hostname": {true, func(s settings) bool { return s.DisableHostname }, ""},
	"ports.https":                {18501, func(s settings) bool { return s.Ports.HTTPS == 18501 }, ""},
	"encrypt_verify_incoming":    {false, func(s settings) bool { return !s.EncryptVerifyIncoming }, ""},
	"encrypt_verify_outgoing":    {false, func(s settings) bool { return !s.EncryptVerifyOutgoing }, ""},
	"disable_keyring_file":       {true, func(s settings) bool { return s.DisableKeyringFile }, ""},
	"domain":                     {"example", func(s settings) bool { return s.Domain == "example" }, ""},
}

// pathKind is the kind of the key at path ("a.b[].c"), walked through
// the schema's types.
func (s *schema) pathKind(path string) (keyKind, bool) {
	typ := rootType
	parts := strings.Split(path, ".")
	for i, part := range parts {
		f, ok := s.field(typ, strings.TrimSuffix(part, "[]"))
		if !ok {
			return 0, false
		}
		if i == len(parts)-1 {
			return f.kind, true
		}
		typ = f.typ
	}
	return 0, false
}

// The TLS keys' samples (tlssettings.go): every key of tls.defaults,
// tls.https and tls.internal_rpc, the tls.grpc keys Consul refuses, and
// the deprecated top-level keys with Consul's warnings.
func init() {
	sample := func(b *tlsBlock, key string) (any, func(*tlsBlock) bool) {
		switch tlsBlockKeys[key](b).(type) {
		case **string:
			return "/etc/t/" + key, func(b *tlsBlock) bool {
				p := *tlsBlockKeys[key](b).(**string)
				return p != nil && *p == "/etc/t/"+key
			}
		default:
			return true, func(b *tlsBlock) bool {
				p := *tlsBlockKeys[key](b).(**bool)
				return p != nil && *p
			}
		}
	}
	add := func(path, block, key, warning string) {
		v, took := sample(&tlsBlock{}, key)
		if key == "tls_min_version" {
			v, took = "TLSv1_2", func(b *tlsBlock) bool { return b.MinVersion != nil && *b.MinVersion == "TLSv1_2" }
		}
		honouredSamples[path] = struct {
			value   any
			took    func(s settings) bool
			warning string
		}{v, func(s settings) bool { return took(s.TLS.block(block)) }, warning}
	}
	for _, block := range []string{"defaults", "https", "internal_rpc"} {
		for key := range tlsBlockKeys {
			add("tls."+block+"."+key, block, key, "")
		}
	}
	add("tls.grpc.verify_outgoing", "grpc", "verify_outgoing", "")
	add("tls.grpc.verify_server_hostname", "grpc", "verify_server_hostname", "")
	for old, to := range deprecatedTLSKeys {
		add(old, to[0], to[1], fmt.Sprintf("The '%s' field is deprecated. Use the '%s' field instead.", old, "tls."+to[0]+"."+to[1]))
	}
	honouredSamples["tls_prefer_server_cipher_suites"] = struct {
		value   any
		took    func(s settings) bool
		warning string
	}{true, func(s settings) bool { return reflect.DeepEqual(s, defaultSettings()) },
		"The 'tls_prefer_server_cipher_suites' field is deprecated and will be ignored."}
}

// sampleValue is a value Consul would accept for a key of kind k.
func sampleValue(k keyKind) any {
	switch k {
	case kindBool:
		return true
	case kindInt:
		return 1
	case kindFloat:
		return 1.5
	case kindStrings:
		return []any{"x"}
	case kindMap:
		return map[string]any{"k": "v"}
	case kindMaps:
		return []any{map[string]any{"k": "v"}}
	case kindBlock, kindBlocks:
		return map[string]any{}
	}
	return "x"
}

// nest puts v at a schema path ("a.b[].c") as a config file's object.
func nest(path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i > 0; i-- {
		name, list := strings.CutSuffix(parts[i-1], "[]")
		inner := map[string]any{parts[i]: v}
		if list {
			v = []any{inner}
		} else {
			v = inner
		}
		parts[i-1] = name
	}
	return map[string]any{parts[0]: v}
}

// toHCL writes a config object as HCL: objects as blocks (a list of
// objects as repeated blocks), other values as attributes.
func toHCL(b *strings.Builder, m map[string]any, indent string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch v := m[k].(type) {
		case map[string]any:
			fmt.Fprintf(b, "%s%s {\n", indent, k)
			toHCL(b, v, indent+"  ")
			fmt.Fprintf(b, "%s}\n", indent)
		case []any:
			if len(v) > 0 {
				if _, objects := v[0].(map[string]any); objects {
					for _, item := range v {
						fmt.Fprintf(b, "%s%s {\n", indent, k)
						toHCL(b, item.(map[string]any), indent+"  ")
						fmt.Fprintf(b, "%s}\n", indent)
					}
					continue
				}
			}
			j, _ := json.Marshal(v)
			fmt.Fprintf(b, "%s%s = %s\n", indent, k, j)
		default:
			j, _ := json.Marshal(v)
			fmt.Fprintf(b, "%s%s = %s\n", indent, k, j)
		}
	}
}

// loadAs writes config as a .json or .hcl file and loads it onto the
// defaults, as `tenure agent -config-file` does before flags.
func loadAs(t *testing.T, format string, config map[string]any) (settings, []string, error) {
	t.Helper()
	var body string
	if format == "json" {
		j, err := json.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		body = string(j)
	} else {
		var b strings.Builder
		toHCL(&b, config, "")
		body = b.String()
	}
	path := configWriter(t, t.TempDir())("config."+format, body)
	var warnings []string
	s, err := loadConfigFiles(defaultSettings(), []string{path}, "", func(w string) { warnings = append(warnings, w) })
	return s, warnings, err
}

// TestConsulKeysSchema: the schema file parses, every type in it is
// reachable from the top level, and every key tenure honours is in it.
func TestConsulKeysSchema(t *testing.T) {
	sc, err := parseSchema(consulKeysText)
	if err != nil {
		t.Fatal(err)
	}
	keys := sc.keys()
	reached := map[string]bool{}
	for _, k := range keys {
		reached[k.typ] = true
	}
	for typ := range sc.types {
		if !reached[typ] {
			t.Errorf("type %s is not reachable from %s", typ, rootType)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(honoured)) {
		// keys() lists a type's fields under its first path only (types
		// recur: tls.https has tls.defaults' fields), so a path is
		// resolved through the schema itself.
		if kind, ok := sc.pathKind(p); !ok || kind == kindBlock || kind == kindBlocks {
			t.Errorf("honoured key %s is not a value key of Consul's schema", p)
		}
	}
	if got, want := slices.Sorted(maps.Keys(honouredSamples)), slices.Sorted(maps.Keys(honoured)); !slices.Equal(got, want) {
		t.Errorf("honouredSamples covers %q, honoured is %q", got, want)
	}
}

// TestEveryConsulKey walks every key of Consul's schema through the config
// parser, as JSON and as HCL: a key tenure honours takes effect; any other
// value key gives exactly one warning, naming it, and changes nothing; a
// block key with nothing in it is accepted silently; and a key Consul does
// not have, at the top level or inside any block, is refused with Consul's
// message.
func TestEveryConsulKey(t *testing.T) {
	sc := consulSchema()
	keys := sc.keys()
	var values, blocks, honouredN int
	for _, format := range []string{"json", "hcl"} {
		refusedIn := map[string]bool{}
		for _, k := range keys {
			if format == "json" {
				switch {
				case k.kind == kindBlock || k.kind == kindBlocks:
					blocks++
				case honoured[k.path] != nil:
					honouredN++
					values++
				default:
					values++
				}
			}
			sample, isHonoured := honouredSamples[k.path]
			v := sampleValue(k.kind)
			if isHonoured {
				v = sample.value
			}
			s, warnings, err := loadAs(t, format, nest(k.path, v))
			if err != nil {
				t.Errorf("%s %s: %v", format, k.path, err)
				continue
			}
			switch {
			case isRegistrationKey(k.path):
				// Read by the register decoder (configdefs.go, reload_test.go).
			case isHonoured:
				if !sample.took(s) {
					t.Errorf("%s %s = %v did not take effect: %+v", format, k.path, v, s)
				}
				var want []string
				if sample.warning != "" {
					want = []string{sample.warning}
				}
				if !slices.Equal(warnings, want) {
					t.Errorf("%s %s: warnings %q, want %q", format, k.path, warnings, want)
				}
			case k.kind == kindBlock || k.kind == kindBlocks:
				if len(warnings) != 0 || !reflect.DeepEqual(s, defaultSettings()) {
					t.Errorf("%s empty block %s: warnings %q, settings changed: %v", format, k.path, warnings, !reflect.DeepEqual(s, defaultSettings()))
				}
			default:
				if want := []string{ignoredKeyWarning(k.path)}; !slices.Equal(warnings, want) {
					t.Errorf("%s %s: warnings %q, want %q", format, k.path, warnings, want)
				}
				if !reflect.DeepEqual(s, defaultSettings()) {
					t.Errorf("%s %s: an ignored key changed the settings: %+v", format, k.path, s)
				}
			}

			// A key Consul does not have, in this key's block.
			parent := ""
			if i := strings.LastIndex(k.path, "."); i >= 0 {
				parent = k.path[:i+1]
			}
			if refusedIn[parent] {
				continue
			}
			refusedIn[parent] = true
			_, _, err = loadAs(t, format, nest(parent+"not_a_consul_key", "x"))
			want := "invalid config key " + strings.ReplaceAll(parent, "[]", "[0]") + "not_a_consul_key"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: unknown key in block %q gave %v, want %q", format, parent, err, want)
			}
		}
	}
	t.Logf("Consul's schema: %d keys, %d of them blocks; of its %d value keys tenure honours %d and warns about %d",
		len(keys), blocks, values, honouredN, values-honouredN)
}

// TestConsulKeyAliasesAndCase: Consul's decoder also takes a field's
// aliases and any case of its name; so does tenure.
func TestConsulKeyAliasesAndCase(t *testing.T) {
	for _, tc := range []struct {
		config map[string]any
		check  func(settings, []string) bool
	}{
		{map[string]any{"Server": true}, func(s settings, _ []string) bool { return s.Server }},
		{map[string]any{"Ports": map[string]any{"HTTP": 18555}}, func(s settings, _ []string) bool { return s.Ports.HTTP == 18555 }},
		{map[string]any{"non_voting_server": true}, func(_ settings, w []string) bool {
			return slices.Equal(w, []string{ignoredKeyWarning("read_replica")})
		}},
		{map[string]any{"checks": []any{map[string]any{"serviceid": "s"}}}, func(s settings, w []string) bool {
			return len(w) == 0 && len(s.configChecks) == 1 && s.configChecks[0]["serviceid"] == "s"
		}},
	} {
		s, warnings, err := loadAs(t, "json", tc.config)
		if err != nil || !tc.check(s, warnings) {
			t.Errorf("%v: %v, warnings %q", tc.config, err, warnings)
		}
	}
}

// sdkTestServerConfig is the config file consul/api's test suite has
// sdk/testutil write (sdk v0.18.2, defaultServerConfig marshalled as
// NewTestServerConfigT does) before it runs `consul agent -config-file`:
// a bootstrapping server on loopback, every port its own, Connect and
// peering on, ACL and addresses blocks empty, and the version of the
// consul binary it found.
func sdkTestServerConfig(dataDir string, ports []string) string {
	const id = "5ec6e2b1-54a8-4c5e-a3b7-2f0b7b0e6c11"
	return `{"node_name":"node-` + id + `","node_id":"` + id + `","performance":{"raft_multiplier":1},` +
		`"bootstrap":true,"server":true,"data_dir":"` + dataDir + `","segments":null,"disable_update_check":true,` +
		`"log_level":"debug","bind_addr":"127.0.0.1","addresses":{},` +
		`"ports":{"dns":` + ports[3] + `,"http":` + ports[0] + `,"https":` + ports[4] + `,"serf_lan":` + ports[2] +
		`,"serf_wan":` + ports[5] + `,"server":` + ports[1] + `,"grpc":` + ports[6] + `,"grpc_tls":` + ports[7] + `},` +
		`"acl":{"tokens":{}},"connect":{"ca_config":{"cluster_id":"11111111-2222-3333-4444-555555555555"},"enabled":true},` +
		`"skip_leave_on_interrupt":true,"peering":{"enabled":true},"version":"1.22.7"}`
}

// TestSDKTestServerConfigAccepted: tenure takes sdk/testutil's config file
// as written, honours what it has (a bootstrapping server on the given
// ports and data dir) and warns once about each key it does not have.
func TestSDKTestServerConfigAccepted(t *testing.T) {
	dir := t.TempDir()
	ports := []string{"18500", "18300", "18301", "18600", "18501", "18302", "18502", "18503"}
	path := configWriter(t, dir)("config.json", sdkTestServerConfig(filepath.Join(dir, "data"), ports))
	s, warnings, err := settingsFrom(t, "-config-file", path)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Server || !s.Bootstrap || s.Ports.HTTP != 18500 || s.Ports.Server != 18300 || s.Ports.SerfLAN != 18301 ||
		s.BindAddr != "127.0.0.1" || s.LogLevel != "debug" || s.DataDir != filepath.Join(dir, "data") ||
		s.SkipLeaveOnInt == nil || !*s.SkipLeaveOnInt || s.leaveOnSignal(os.Interrupt) {
		t.Fatalf("settings %+v", s)
	}
	want := []string{"bootstrap = true: do not enable unless necessary",
		"ports.https is set but no certificate is: every HTTPS handshake will fail until tls.https (or tls.defaults) cert_file and key_file are"}
	for _, k := range []string{"connect.ca_config", "connect.enabled", "disable_update_check", "peering.enabled",
		"performance.raft_multiplier", "ports.dns", "ports.grpc", "ports.grpc_tls", "ports.serf_wan", "version"} {
		want = append(want, ignoredKeyWarning(k))
	}
	sort.Strings(want)
	sort.Strings(warnings)
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings\n  %s\nwant\n  %s", strings.Join(warnings, "\n  "), strings.Join(want, "\n  "))
	}
}
