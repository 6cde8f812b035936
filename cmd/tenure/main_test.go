package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/impl"
)

func TestParseAgentFlags(t *testing.T) {
	good := []string{"-server", "-node", "n1", "-data-dir", "/d", "-raft-addr", "127.0.0.1:8300",
		"-http-addr", "127.0.0.1:8500", "-peers", "n1=127.0.0.1:8300, n2=127.0.0.1:8301"}
	f, err := parseAgentFlags(good, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []impl.Peer{{Name: "n1", RaftAddr: "127.0.0.1:8300"}, {Name: "n2", RaftAddr: "127.0.0.1:8301"}}
	if !slices.Equal(f.peers, want) || f.node != "n1" || f.http != "127.0.0.1:8500" {
		t.Fatalf("parsed %+v", f)
	}
	if f, err := parseAgentFlags([]string{"-dev"}, &bytes.Buffer{}); err != nil || f.node == "" || f.http != "127.0.0.1:8500" {
		t.Fatalf("-dev: %+v %v", f, err)
	}
	bad := map[string][]string{
		"neither mode":    {},
		"both modes":      {"-dev", "-server"},
		"dev with peers":  {"-dev", "-peers", "a=b"},
		"server no peers": {"-server", "-node", "n1", "-data-dir", "/d", "-raft-addr", "x:1"},
		"bad peer":        {"-server", "-node", "n1", "-data-dir", "/d", "-raft-addr", "x:1", "-peers", "n1"},
		"empty peer name": {"-server", "-node", "n1", "-data-dir", "/d", "-raft-addr", "x:1", "-peers", "=x:1"},
		"bad log level":   {"-dev", "-log-level", "loud"},
		"stray argument":  {"-dev", "extra"},
	}
	for name, args := range bad {
		if _, err := parseAgentFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: accepted %q", name, args)
		}
	}
}

func TestRunDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
		t.Errorf("no command: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut.String())
	}
	if code := run([]string{"agent", "-dev", "-server"}, &out, &errOut); code != 2 {
		t.Errorf("bad agent flags: exit %d", code)
	}
	if code := run([]string{"help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "conform") {
		t.Errorf("help: exit %d, stdout %q", code, out.String())
	}
}
