package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// version is tenure's release version.
const version = "0.1.0"

// versionInfo is what `tenure version -format=json` prints, in the shape
// of `consul version -format=json`.
type versionInfo struct {
	Version     string
	Revision    string
	Prerelease  string
	FIPS        string
	BuildDate   string
	RPCProtocol int
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, RPCProtocol: 2}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.BuildDate = s.Value
			}
		}
	}
	return v
}

// buildTag is the gossip build tag, "<version>:<revision>" as Consul's, the
// revision cut to 8 characters.
func buildTag() string {
	v := currentVersion()
	return v.Version + ":" + v.Revision[:min(8, len(v.Revision))]
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
		out, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(stdout, string(out))
	case "pretty":
		fmt.Fprintf(stdout, "tenure v%s\n", v.Version)
		if v.Revision != "" {
			fmt.Fprintf(stdout, "Revision %s\n", v.Revision)
		}
		if v.BuildDate != "" {
			fmt.Fprintf(stdout, "Build Date %s\n", v.BuildDate)
		}
		fmt.Fprintf(stdout, "Protocol %d spoken by default, understands 2 to 3 (agent will automatically use protocol >2 when speaking to compatible agents)\n", v.RPCProtocol)
	default:
		fmt.Fprintf(stderr, "tenure version: Invalid format: %s\n", *format)
		return 1
	}
	return 0
}
