package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"time"
)

// version is tenure's release version.
const version = "0.1.0"

// unknownBuildDate stands in for the build time of a binary built without
// VCS stamping (go build -buildvcs=false, or outside a git checkout): the
// same placeholder Consul's own builds without a date carry.
var unknownBuildDate = time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC)

// rpcVersions is the RPC protocol range `consul version -format=json`
// reports: protocol 2 by default, 2 to 3 understood.
type rpcVersions struct {
	Default, Min, Max int
}

// versionInfo is what `tenure version -format=json` prints, in the shape
// of `consul version -format=json`.
type versionInfo struct {
	Version    string
	Revision   string
	Prerelease string
	FIPS       string `json:",omitempty"`
	BuildDate  time.Time
	RPC        rpcVersions
}

// currentVersion is this binary's version, with the revision and build
// time Go stamped into it from git (vcs.revision, vcs.time).
func currentVersion() versionInfo {
	v := versionInfo{Version: version, BuildDate: unknownBuildDate, RPC: rpcVersions{Default: 2, Min: 2, Max: 3}}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Revision, v.BuildDate = vcsStamp(bi.Settings)
	return v
}

// vcsStamp reads the revision and commit time from Go's build settings;
// either may be missing, and a commit time that does not parse is taken
// as unknown.
func vcsStamp(settings []debug.BuildSetting) (revision string, built time.Time) {
	built = unknownBuildDate
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				built = t.UTC()
			}
		}
	}
	return revision, built
}

// buildTag is the gossip build tag, "<version>:<revision>" as Consul's, the
// revision cut to 8 characters.
func buildTag() string {
	v := currentVersion()
	return v.Version + ":" + v.Revision[:min(8, len(v.Revision))]
}

// isVersionFlag reports whether arg asks for the version the way Consul's
// CLI takes it before any command: -v, -version or --version.
func isVersionFlag(arg string) bool {
	return arg == "-v" || arg == "-version" || arg == "--version"
}

// runVersion answers like `consul version`: text by default, JSON with
// -format=json.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tenure version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "pretty", "output format: pretty or json")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tenure version: unexpected arguments %q\n", fs.Args())
		return 1
	}
	v := currentVersion()
	switch *format {
	case "json":
		out, err := json.MarshalIndent(v, "", "   ")
		if err != nil {
			fmt.Fprintf(stderr, "tenure version: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(out))
	case "pretty":
		fmt.Fprintf(stdout, "tenure v%s\n", v.Version)
		if v.Revision != "" {
			fmt.Fprintf(stdout, "Revision %s\n", v.Revision)
		}
		fmt.Fprintf(stdout, "Build Date %s\n", v.BuildDate.Format(time.RFC3339))
		fmt.Fprintf(stdout, "Protocol %d spoken by default, understands %d to %d (agent will automatically use protocol >2 when speaking to compatible agents)\n",
			v.RPC.Default, v.RPC.Min, v.RPC.Max)
	default:
		fmt.Fprintf(stderr, "tenure version: Invalid format: %s\n", *format)
		return 1
	}
	return 0
}
