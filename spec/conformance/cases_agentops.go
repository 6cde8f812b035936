package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The agent's operational endpoints (S67), through HTTP only, so that the
// cases run on real Consul as on tenure: /v1/agent/self names the build and
// the gossip address an agent can be joined at, /v1/agent/host reports the
// host, /v1/agent/metrics carries the Go runtime's gauges and refuses
// Prometheus without its retention set, and /v1/agent/monitor streams the
// log, in which a refused request stands with its token hidden.
func agentOpsCases() []Case {
	return []Case{
		{clause: "S67", name: "agent-self-names-its-build-and-gossip-address", run: s67Self},
		{clause: "S67", name: "agent-host-reports-the-host", run: s67Host},
		{clause: "S67", name: "agent-metrics-carry-runtime-gauges", run: s67Metrics},
		{clause: "S67", name: "agent-monitor-streams-request-errors-token-hidden", run: s67Monitor},
	}
}

func s67Self(t *caseT) {
	var self struct {
		Config      map[string]any
		DebugConfig map[string]any
		Member      struct {
			Addr string
			Port int
		}
		Stats map[string]map[string]string
	}
	t.decode("agent self", t.Do(http.MethodGet, "/v1/agent/self", nil), &self)
	for _, k := range []string{"Datacenter", "PrimaryDatacenter", "NodeName", "NodeID", "Revision", "Server", "Version", "BuildDate", "BindAddr"} {
		t.Check(self.Config[k] != nil, "Config lacks %s: %v", k, self.Config)
	}
	date, _ := self.Config["BuildDate"].(string)
	_, err := time.Parse(time.RFC3339, date)
	t.Check(err == nil, "Config.BuildDate %q is not RFC 3339: %v", date, err)
	if build := self.Stats["build"]; t.Check(build != nil, "Stats lacks build") {
		t.Equal("Stats.build.revision", build["revision"], self.Config["Revision"])
		t.Equal("Stats.build.version", build["version"], self.Config["Version"])
	}
	t.Require(self.DebugConfig != nil, "no DebugConfig")
	t.Equal("DebugConfig.NodeName", self.DebugConfig["NodeName"], self.Config["NodeName"])
	t.Equal("DebugConfig.ServerMode", self.DebugConfig["ServerMode"], self.Config["Server"])
	serf, _ := self.DebugConfig["SerfAdvertiseAddrLAN"].(string)
	t.Equal("DebugConfig.SerfAdvertiseAddrLAN", serf, "tcp://"+net.JoinHostPort(self.Member.Addr, strconv.Itoa(self.Member.Port)))
}

// hostName is the agent's host name as /v1/agent/host reports it.
func (t *caseT) hostName() string {
	var host struct{ Host struct{ Hostname string } }
	t.decode("agent host", t.Do(http.MethodGet, "/v1/agent/host", nil), &host)
	return host.Host.Hostname
}

func s67Host(t *caseT) {
	r := t.Do(http.MethodGet, "/v1/agent/host", nil)
	t.Require(r.Code == http.StatusOK, "GET /v1/agent/host: %s", r)
	var host map[string]json.RawMessage
	t.decode("agent host", r, &host)
	for _, k := range []string{"Memory", "CPU", "Host", "Disk", "CollectionTime", "Errors"} {
		_, ok := host[k]
		t.Check(ok, "host lacks %s", k)
	}
	var collected int64
	t.Check(json.Unmarshal(host["CollectionTime"], &collected) == nil && collected > 0, "CollectionTime %s", host["CollectionTime"])
	var parts struct {
		Memory struct{ Total uint64 }
		Host   struct{ Hostname, OS string }
		Disk   struct{ Path string }
		CPU    []struct{ ModelName string }
	}
	t.decode("agent host", r, &parts)
	t.Check(parts.Memory.Total > 0, "Memory.total %d", parts.Memory.Total)
	t.Check(parts.Host.Hostname != "" && parts.Host.OS != "", "Host %+v", parts.Host)
	t.Equal("Disk.path", parts.Disk.Path, "/")
	t.Check(len(parts.CPU) > 0, "no CPU")
	r = t.Do(http.MethodPut, "/v1/agent/host", nil)
	t.Check(r.Code == http.StatusMethodNotAllowed, "PUT /v1/agent/host: %s, want 405", r)
}

func s67Metrics(t *caseT) {
	host := t.hostName()
	// Runtime statistics are taken every second into 10 s intervals; the
	// summary shows the last closed one, or the first while it is alone.
	want := map[string]bool{"consul." + host + ".runtime.alloc_bytes": true, "consul.runtime.alloc_bytes": true}
	var last *resp
	t.WaitFor("the runtime's gauges in /v1/agent/metrics", 15*time.Second, 500*time.Millisecond, func() bool {
		last = t.Do(http.MethodGet, "/v1/agent/metrics", nil)
		var m struct {
			Timestamp                 string
			Gauges                    []struct{ Name string }
			Points, Counters, Samples []json.RawMessage
		}
		if last.Code != http.StatusOK || json.Unmarshal(last.Body, &m) != nil || m.Timestamp == "" ||
			m.Points == nil || m.Counters == nil || m.Samples == nil {
			return false
		}
		for _, g := range m.Gauges {
			if want[g.Name] {
				return true
			}
		}
		return false
	})
	// Without prometheus_retention_time, Consul sets the reason and sends
	// nothing; an agent with Prometheus on sends its text format.
	for _, ask := range []struct{ query, accept string }{{"?format=prometheus", ""}, {"", "application/openmetrics-text"}} {
		r := t.doWithAccept("/v1/agent/metrics"+ask.query, ask.accept)
		refused := r.Code == http.StatusOK && len(r.Body) == 0 && strings.Contains(r.Header.Get("X-Consul-Reason"), "Prometheus is not enabled")
		served := r.Code == http.StatusOK && strings.HasPrefix(r.Text(), "# ")
		t.Check(refused || served, "Prometheus asked by %q %q: %s (reason %q)", ask.query, ask.accept, r, r.Header.Get("X-Consul-Reason"))
	}
}

// doWithAccept is a GET with an Accept header.
func (t *caseT) doWithAccept(path, accept string) *resp {
	req, err := t.env.request(t.ctx, http.MethodGet, path, nil, t.env.withToken(nil))
	if err != nil {
		t.Fatalf("%v", err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := t.env.http.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(res.Body).WriteTo(&b); err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return &resp{Code: res.StatusCode, Header: res.Header, Body: []byte(b.String())}
}

// monitor opens GET /v1/agent/monitor with query and returns its lines as
// they come; the stream ends with the case.
func (t *caseT) monitor(query string) <-chan string {
	ctx, cancel := context.WithCancel(t.ctx)
	req, err := t.env.request(ctx, http.MethodGet, "/v1/agent/monitor"+query, nil, t.env.withToken(nil))
	if err != nil {
		cancel()
		t.Fatalf("%v", err)
	}
	res, err := t.env.http.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("monitor: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		cancel()
		t.Fatalf("monitor%s: status %d", query, res.StatusCode)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func(context.Context) error {
		cancel()
		return res.Body.Close()
	})
	return lines
}

// awaitLine reads lines until one satisfies match and returns the lines
// read, the match last; it gives up (false) when the stream ends or
// timeout passes first.
func awaitLine(lines <-chan string, timeout time.Duration, match func(string) bool) ([]string, bool) {
	var seen []string
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return seen, false
			}
			seen = append(seen, line)
			if match(line) {
				return seen, true
			}
		case <-deadline.C:
			return seen, false
		}
	}
}

func s67Monitor(t *caseT) {
	r := t.Do(http.MethodGet, "/v1/agent/monitor?loglevel=bogus", nil)
	t.Check(r.Code == http.StatusBadRequest && r.Text() == "Unknown log level: bogus", "unknown level: %s", r)

	ghost := t.ServiceName("ghost")
	secret := "s3cret-" + t.env.runID
	plain := t.monitor("?loglevel=info")
	asJSON := t.monitor("?loglevel=info&logjson")
	path := "/v1/agent/service/" + url.PathEscape(ghost) + "?token=" + secret
	isTheError := func(l string) bool { return strings.Contains(l, "Request error") && strings.Contains(l, ghost) }
	// A line logged before a monitor's sink is in place is not streamed:
	// ask again until the refusal shows.
	var seen []string
	found := false
	for range 20 {
		r := t.Do(http.MethodGet, path, nil)
		t.Require(r.Code == http.StatusNotFound, "GET of an unknown service: %s, want 404", r)
		var more []string
		more, found = awaitLine(plain, time.Second, isTheError)
		seen = append(seen, more...)
		if found {
			break
		}
	}
	t.Require(found, "the refused request never showed in the monitor; read %q", seen)
	line := seen[len(seen)-1]
	t.Check(strings.Contains(line, "[ERROR]") && strings.Contains(line, "method=GET") && strings.Contains(line, "token=<hidden>"),
		"request error line %q", line)
	for _, l := range seen {
		t.Check(!strings.Contains(l, secret), "the token reached the log: %q", l)
	}
	jsonLines, found := awaitLine(asJSON, 10*time.Second, isTheError)
	t.Require(found, "the refused request never showed in the JSON monitor; read %q", jsonLines)
	var entry map[string]any
	last := jsonLines[len(jsonLines)-1]
	if t.Check(json.Unmarshal([]byte(last), &entry) == nil, "JSON line %q", last) {
		t.Equal("@level of the request error", entry["@level"], "error")
		t.Equal("@message of the request error", entry["@message"], "Request error")
		u, _ := entry["url"].(string)
		t.Check(strings.Contains(u, "token=<hidden>") && !strings.Contains(u, secret), "url in the JSON line %q", u)
	}
	for _, l := range jsonLines {
		t.Check(!strings.Contains(l, secret), "the token reached the JSON log: %q", l)
	}
}
