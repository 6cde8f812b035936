package httpapi

import (
	"maps"
	"time"
)

// The parts of /v1/agent/self that server and client agents share: the
// build's identity and DebugConfig.

// consulPlaceholderDate is what Consul shows for a build without a date,
// and so what tenure shows when the binary carries no VCS stamp.
var consulPlaceholderDate = time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC)

func (b BuildInfo) date() time.Time {
	if b.Date.IsZero() {
		return consulPlaceholderDate
	}
	return b.Date.UTC()
}

// selfConfig is the Config section: the agent's identity, with the build's
// revision and date (RFC 3339) as Consul reports them.
func selfConfig(o *Options, node, nodeID string, server bool) map[string]any {
	return map[string]any{"Datacenter": o.Datacenter, "PrimaryDatacenter": o.Datacenter,
		"NodeName": node, "NodeID": nodeID, "Server": server, "Version": o.Version,
		"Revision": o.Build.Revision, "BuildDate": o.Build.date().Format(time.RFC3339)}
}

// selfBuildStats is Stats["build"].
func selfBuildStats(o *Options) map[string]string {
	return map[string]string{"version": o.Version, "revision": o.Build.Revision, "prerelease": "", "version_metadata": ""}
}

// selfDebugConfig is the DebugConfig section: the caller's settings, with
// the build's fields as Consul's runtime configuration spells them (its
// BuildDate in Go's default time format, not RFC 3339).
func selfDebugConfig(o *Options) map[string]any {
	out := maps.Clone(o.DebugConfig)
	if out == nil {
		out = map[string]any{}
	}
	out["Version"] = o.Version
	out["Revision"] = o.Build.Revision
	out["VersionPrerelease"] = ""
	out["VersionMetadata"] = ""
	out["BuildDate"] = o.Build.date().String()
	return out
}
