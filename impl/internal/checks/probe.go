package checks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"
)

// prober runs one attempt of an interval check. It must return once ctx
// ends, so a hanging target costs its own check one timeout and nothing
// else.
type prober interface {
	Probe(ctx context.Context) (status, output string)
}

// newProber builds the prober for a prepared HTTP, TCP, script or docker
// definition; a docker check reaches the engine at dockerHost.
func newProber(d Definition, dockerHost string) (prober, error) {
	switch k := d.Kind(); k {
	case kindDocker:
		return newDockerProbe(d, dockerHost)
	case kindHTTP:
		return newHTTPProbe(d), nil
	case kindTCP:
		return tcpProbe{d}, nil
	case kindScript:
		return scriptProbe{d}, nil
	default:
		return nil, fmt.Errorf("no prober for a %q check", k)
	}
}

// tail keeps the last max bytes written to it and counts all of them, so a
// chatty target costs bounded memory whatever it sends.
type tail struct {
	max   int
	buf   []byte
	total int
}

func (t *tail) Write(p []byte) (int, error) {
	t.total += len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.buf) }

type httpProbe struct {
	d      Definition
	client *http.Client
}

func newHTTPProbe(d Definition) *httpProbe {
	tr := &http.Transport{
		// A fresh connection per probe: a check must see the target as a
		// new client would, and an idle pool would outlive a stopped check.
		DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: d.TLSSkipVerify,
			ServerName:         d.TLSServerName,
		},
	}
	c := &http.Client{Transport: tr, Timeout: d.effectiveTimeout()}
	if d.DisableRedirects {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return &httpProbe{d: d, client: c}
}

func (p *httpProbe) Probe(ctx context.Context) (string, string) {
	method := p.d.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if p.d.Body != "" {
		body = strings.NewReader(p.d.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.d.HTTP, body)
	if err != nil {
		return Critical, err.Error()
	}
	req.Header = make(http.Header, len(p.d.Header)+2)
	for k, v := range p.d.Header {
		req.Header[k] = append([]string(nil), v...)
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Consul Health Check")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "text/plain, text/*, */*")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return Critical, err.Error()
	}
	defer resp.Body.Close()
	out := &tail{max: p.d.OutputMaxSize}
	// A body cut short by the timeout still counts: the status line came.
	_, _ = io.Copy(out, resp.Body)
	text := fmt.Sprintf("HTTP %s %s: %s Output: %s", method, p.d.HTTP, resp.Status, out)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return Passing, text
	case resp.StatusCode == http.StatusTooManyRequests:
		return Warning, text
	default:
		return Critical, text
	}
}

type tcpProbe struct{ d Definition }

func (p tcpProbe) Probe(ctx context.Context) (string, string) {
	nd := &net.Dialer{Timeout: p.d.effectiveTimeout()}
	var conn net.Conn
	var err error
	what := "TCP"
	if p.d.TCPUseTLS {
		what = "TCP+TLS"
		td := &tls.Dialer{NetDialer: nd, Config: &tls.Config{
			InsecureSkipVerify: p.d.TLSSkipVerify,
			ServerName:         p.d.TLSServerName,
		}}
		conn, err = td.DialContext(ctx, "tcp", p.d.TCP)
	} else {
		conn, err = nd.DialContext(ctx, "tcp", p.d.TCP)
	}
	if err != nil {
		return Critical, err.Error()
	}
	_ = conn.Close() // only reaching the listener matters
	return Passing, fmt.Sprintf("%s connect %s: Success", what, p.d.TCP)
}

type scriptProbe struct{ d Definition }

// scriptWaitDelay bounds how long a killed script's leftover children may
// hold its output pipes open before the probe gives up on them.
const scriptWaitDelay = time.Second

func (p scriptProbe) Probe(ctx context.Context) (string, string) {
	timeout := p.d.effectiveTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &tail{max: p.d.OutputMaxSize}
	cmd := exec.CommandContext(ctx, p.d.Args[0], p.d.Args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = scriptWaitDelay
	err := cmd.Run()
	text := out.String()
	if out.total > len(out.buf) {
		text = fmt.Sprintf("Captured %d of %d bytes\n...\n%s", len(out.buf), out.total, text)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := fmt.Sprintf("Timed out (%s) running check", timeout)
		if text != "" {
			msg += "\n\n" + text
		}
		return Critical, msg
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return Passing, text
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return Warning, text
	case errors.As(err, &exit):
		return Critical, text
	default: // could not start: the error is all there is to say
		return Critical, err.Error()
	}
}
