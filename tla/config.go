package tla

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// config is what the explorer needs from one MCSessions_*.cfg file.
type config struct {
	Name       string // file name, e.g. "MCSessions_release.cfg"
	Scenario   string // prefix of the MCSessions.tla definitions, e.g. "Rel"
	MaxIndex   int
	Invariants []string
	Properties []string
}

// scenarioConstants are the Sessions constants a scenario supplies with
// "<Constant> <- <Prefix>_<Constant>"; the catalog ones come from "MC_".
var scenarioConstants = []string{"Sessions", "SessionNode", "SessionChecks", "SessionBehavior",
	"SessionTTL", "SessionDelay", "Clients", "ClientSession", "Queries", "QuerySession", "Keys"}
var catalogConstants = []string{"Nodes", "Services", "ServiceNode", "Checks", "CheckNode", "CheckService"}

// sections maps a config keyword to its section, singular or plural.
var sections = map[string]string{
	"CONSTANT": "CONSTANT", "CONSTANTS": "CONSTANT",
	"INVARIANT": "INVARIANT", "INVARIANTS": "INVARIANT",
	"PROPERTY": "PROPERTY", "PROPERTIES": "PROPERTY",
}

var (
	substRE  = regexp.MustCompile(`^([A-Za-z]+)\s*<-\s*([A-Za-z]+)_([A-Za-z]+)$`)
	assignRE = regexp.MustCompile(`^([A-Za-z]+)\s*=\s*(\S+)$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
)

// loadConfig reads and parses a .cfg file.
func loadConfig(path string) (config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return config{}, fmt.Errorf("load config: %w", err)
	}
	cfg, err := parseConfig(filepath.Base(path), string(data))
	if err != nil {
		return config{}, fmt.Errorf("load config %s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig parses the subset of TLC's config language the MCSessions
// configs use: SPECIFICATION Spec, CONSTANTS with "<-" substitutions and
// "MaxIndex = n", INVARIANT(S), PROPERTY/PROPERTIES, CHECK_DEADLOCK.
func parseConfig(name, text string) (config, error) {
	cfg := config{Name: name}
	section := ""
	seen := map[string]bool{}
	for i, raw := range strings.Split(text, "\n") {
		line := raw
		if j := strings.Index(line, `\*`); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fail := func(format string, args ...any) (config, error) {
			return config{}, fmt.Errorf("line %d %q: %s", i+1, raw, fmt.Sprintf(format, args...))
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "SPECIFICATION":
			if len(fields) != 2 || fields[1] != "Spec" {
				return fail("want SPECIFICATION Spec")
			}
			section = ""
			continue
		case "CHECK_DEADLOCK":
			if len(fields) != 2 || fields[1] != "FALSE" {
				return fail("want CHECK_DEADLOCK FALSE")
			}
			section = ""
			continue
		case "CONSTANT", "CONSTANTS", "INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES":
			section = sections[fields[0]]
			fields = fields[1:]
			if len(fields) == 0 {
				continue
			}
			line = strings.Join(fields, " ")
		}
		switch section {
		case "CONSTANT":
			if m := substRE.FindStringSubmatch(line); m != nil {
				if seen[m[1]] {
					return fail("constant %s given twice", m[1])
				}
				seen[m[1]] = true
				if m[1] != m[3] {
					return fail("constant %s substituted by a definition for %s", m[1], m[3])
				}
				switch {
				case slices.Contains(catalogConstants, m[1]):
					if m[2] != "MC" {
						return fail("catalog constant %s must come from MC_", m[1])
					}
				case slices.Contains(scenarioConstants, m[1]):
					if cfg.Scenario != "" && cfg.Scenario != m[2] {
						return fail("scenario %s mixed with %s", m[2], cfg.Scenario)
					}
					cfg.Scenario = m[2]
				default:
					return fail("unknown constant %s", m[1])
				}
				continue
			}
			if m := assignRE.FindStringSubmatch(line); m != nil && m[1] == "MaxIndex" {
				n, err := strconv.Atoi(m[2])
				if err != nil || n < 0 {
					return fail("MaxIndex must be a natural number")
				}
				seen[m[1]] = true
				cfg.MaxIndex = n
				continue
			}
			return fail("unsupported constant line")
		case "INVARIANT", "PROPERTY":
			for _, f := range fields {
				if !nameRE.MatchString(f) {
					return fail("%q is not an operator name", f)
				}
				if section == "INVARIANT" {
					cfg.Invariants = append(cfg.Invariants, f)
				} else {
					cfg.Properties = append(cfg.Properties, f)
				}
			}
		default:
			return fail("unexpected line")
		}
	}
	for _, c := range append(append([]string{"MaxIndex"}, catalogConstants...), scenarioConstants...) {
		if !seen[c] {
			return config{}, fmt.Errorf("constant %s is not given", c)
		}
	}
	if _, ok := scenarios[cfg.Scenario]; !ok {
		return config{}, fmt.Errorf("scenario %q is not one the explorer knows", cfg.Scenario)
	}
	for _, inv := range cfg.Invariants {
		if _, ok := invariants[inv]; !ok {
			return config{}, fmt.Errorf("invariant %s has no Go counterpart", inv)
		}
	}
	for _, p := range cfg.Properties {
		if _, ok := properties[p]; !ok {
			return config{}, fmt.Errorf("property %s has no Go counterpart", p)
		}
	}
	return cfg, nil
}
