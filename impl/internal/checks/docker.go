package checks

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// A docker check runs its Args inside a container through the Docker
// Engine's HTTP API, as Consul's does: create an exec, start it and
// collect its output, then read its exit code (0 passing, 1 warning,
// anything else critical). The engine is at $DOCKER_HOST, by default its
// unix socket; a failure to reach it, or a container that is unknown,
// paused or stopped, makes the check critical with the error as output.
// Unlike Consul's, each run is bounded by the check's timeout (default
// 30 s, the script checks'), so an exec that never ends cannot stall the
// check, and an output stream the engine frames anyway (multiplexed) is
// unframed before it is kept.

// defaultDockerHost is the Docker Engine's default address on Unix.
const defaultDockerHost = "unix:///var/run/docker.sock"

// maxDockerReply bounds the engine's JSON answers (exec IDs, inspections).
const maxDockerReply = 64 << 10

// dockerHost is the engine address a runner uses: the one given, else
// $DOCKER_HOST, else the default socket.
func dockerHost(given string) string {
	if given != "" {
		return given
	}
	if env := os.Getenv("DOCKER_HOST"); env != "" {
		return env
	}
	return defaultDockerHost
}

// dockerClient speaks just enough of the Engine API for checks, over a
// unix socket or TCP.
type dockerClient struct {
	base   string // scheme://host[/path] requests are sent to
	client *http.Client
}

// newDockerClient parses host as Docker does: unix:///path or
// tcp://host:port[/base]; the engine's API is unversioned here, as in
// Consul, so the engine answers with its own current version.
func newDockerClient(host string) (*dockerClient, error) {
	proto, addr, ok := strings.Cut(host, "://")
	if !ok {
		return nil, fmt.Errorf("unable to parse docker host `%s`", host)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	switch proto {
	case "unix":
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}
		// Any host name will do over a socket; "docker" says what it is.
		return &dockerClient{base: "http://docker", client: &http.Client{Transport: tr}}, nil
	case "tcp":
		u, err := url.Parse("tcp://" + addr)
		if err != nil {
			return nil, fmt.Errorf("docker host %q: %w", host, err)
		}
		return &dockerClient{base: "http://" + u.Host + strings.TrimSuffix(u.Path, "/"), client: &http.Client{Transport: tr}}, nil
	}
	return nil, fmt.Errorf("docker host %q: protocol %q is not supported (unix or tcp)", host, proto)
}

// call sends a JSON body (if any) and returns the status and the answer,
// whose body the caller reads and closes.
func (c *dockerClient) call(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.client.Do(req)
}

// reply reads a bounded answer body.
func reply(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxDockerReply))
	return strings.TrimSpace(string(b))
}

// createExec makes an exec of cmd in the container and returns its ID.
func (c *dockerClient) createExec(ctx context.Context, container string, cmd []string) (string, error) {
	resp, err := c.call(ctx, http.MethodPost, "/containers/"+url.PathEscape(container)+"/exec",
		map[string]any{"AttachStdin": false, "AttachStdout": true, "AttachStderr": true, "Tty": false, "Cmd": cmd})
	if err != nil {
		return "", fmt.Errorf("create exec failed for container %s: %w", container, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated:
		var out struct{ ID string }
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxDockerReply)).Decode(&out); err != nil || out.ID == "" {
			return "", fmt.Errorf("create exec response for container %s cannot be parsed: %v", container, err)
		}
		return out.ID, nil
	case http.StatusNotFound:
		return "", fmt.Errorf("create exec failed for unknown container %s", container)
	case http.StatusConflict:
		return "", fmt.Errorf("create exec failed since container %s is paused or stopped", container)
	}
	return "", fmt.Errorf("create exec failed for container %s with status %d: %s", container, resp.StatusCode, reply(resp))
}

// startExec runs the exec to its end, keeping the tail of its output in
// out.
func (c *dockerClient) startExec(ctx context.Context, container, exec string, out *tail) error {
	// Tty, as Consul asks: the engine then sends the output unframed.
	resp, err := c.call(ctx, http.MethodPost, "/exec/"+url.PathEscape(exec)+"/start", map[string]any{"Detach": false, "Tty": true})
	if err != nil {
		return fmt.Errorf("start exec failed for container %s: %w", container, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.docker.multiplexed-stream") {
			err = demux(out, resp.Body)
		} else {
			_, err = io.Copy(out, resp.Body)
		}
		// The engine may reset the connection once the output is sent,
		// after the status came; what arrived is the output (Consul
		// ignores the reset too).
		if err != nil && !isReset(err) {
			return fmt.Errorf("start exec failed for container %s: %w", container, err)
		}
		return nil
	case http.StatusNotFound:
		return fmt.Errorf("start exec failed for container %s: invalid exec id %s", container, exec)
	case http.StatusConflict:
		return fmt.Errorf("start exec failed since container %s is paused or stopped", container)
	}
	return fmt.Errorf("start exec failed for container %s with status %d: %s", container, resp.StatusCode, reply(resp))
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset by peer") }

// inspectExec returns the exit code of a finished exec.
func (c *dockerClient) inspectExec(ctx context.Context, container, exec string) (int, error) {
	resp, err := c.call(ctx, http.MethodGet, "/exec/"+url.PathEscape(exec)+"/json", nil)
	if err != nil {
		return 0, fmt.Errorf("inspect exec failed for container %s: %w", container, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var out struct{ ExitCode int }
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxDockerReply)).Decode(&out); err != nil {
			return 0, fmt.Errorf("inspect exec response for container %s cannot be parsed: %v", container, err)
		}
		return out.ExitCode, nil
	case http.StatusNotFound:
		return 0, fmt.Errorf("inspect exec failed for container %s: invalid exec id %s", container, exec)
	}
	return 0, fmt.Errorf("inspect exec failed for container %s with status %d: %s", container, resp.StatusCode, reply(resp))
}

// demux copies the payloads of a multiplexed stream (frames of an 8-byte
// header, whose last four bytes are the payload's length, then the
// payload) into out, stdout and stderr alike, in order.
func demux(out io.Writer, r io.Reader) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if _, err := io.CopyN(out, r, int64(binary.BigEndian.Uint32(hdr[4:]))); err != nil {
			return err
		}
	}
}

type dockerProbe struct {
	d      Definition
	client *dockerClient
}

func newDockerProbe(d Definition, host string) (*dockerProbe, error) {
	c, err := newDockerClient(host)
	if err != nil {
		return nil, err
	}
	return &dockerProbe{d: d, client: c}, nil
}

func (p *dockerProbe) Probe(ctx context.Context) (string, string) {
	timeout := p.d.effectiveTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(err error) (string, string) {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Critical, fmt.Sprintf("Timed out (%s) running check: %v", timeout, err)
		}
		return Critical, err.Error()
	}
	container := p.d.DockerContainerID
	exec, err := p.client.createExec(ctx, container, p.d.Args)
	if err != nil {
		return fail(err)
	}
	out := &tail{max: p.d.OutputMaxSize}
	if err := p.client.startExec(ctx, container, exec, out); err != nil {
		return fail(err)
	}
	code, err := p.client.inspectExec(ctx, container, exec)
	if err != nil {
		return fail(err)
	}
	text := out.String()
	if out.total > len(out.buf) {
		text = fmt.Sprintf("Captured %d of %d bytes\n...\n%s", len(out.buf), out.total, text)
	}
	switch code {
	case 0:
		return Passing, text
	case 1:
		return Warning, text
	}
	return Critical, text
}
