package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Client talks to an agent.
type Client struct {
	base *url.URL
	hc   *http.Client
}

// NewClient talks to the agent at base ("http://127.0.0.1:PORT"); hc nil is a default client
// without a total timeout (Wait and Output are long requests; callers bound them with ctx).
func NewClient(base string, hc *http.Client) *Client {
	u, err := url.Parse(base)
	if err != nil {
		u = &url.URL{Scheme: "http", Host: base}
	}
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second,
			DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}}
	}
	return &Client{base: u, hc: hc}
}

func (c *Client) url(path string, q url.Values) string {
	u := *c.base
	u.Path = path
	u.RawQuery = q.Encode()
	return u.String()
}

// do sends a request and returns the response when its status is 2xx; otherwise the agent's
// message as an error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent at %s: %w", c.base.Host, err)
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("agent: %s", strings.TrimSpace(string(b)))
	}
	return resp, nil
}

func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, body io.Reader, out any) error {
	resp, err := c.do(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("agent: %s %s: %w", method, path, err)
	}
	return nil
}

// Health returns nil once the agent answers.
func (c *Client) Health(ctx context.Context) error {
	return c.doJSON(ctx, http.MethodGet, "/v1/health", nil, nil, nil)
}

// Start starts a new run of the instance req.Name (a name whose previous run has exited may
// start again: a restart) and returns its number (1, 2, ...). Starting a running name fails.
func (c *Client) Start(ctx context.Context, req StartRequest) (int, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	var out struct{ Run int }
	if err := c.doJSON(ctx, http.MethodPost, "/v1/instances", nil, bytes.NewReader(b), &out); err != nil {
		return 0, err
	}
	return out.Run, nil
}

func runPath(name string, run int, what string) string {
	return "/v1/instances/" + url.PathEscape(name) + "/runs/" + strconv.Itoa(run) + "/" + what
}

// Wait blocks until run of name has exited and says how.
func (c *Client) Wait(ctx context.Context, name string, run int) (Exit, error) {
	var ex Exit
	err := c.doJSON(ctx, http.MethodGet, runPath(name, run, "wait"), nil, nil, &ex)
	return ex, err
}

// Output copies stream ("stdout" or "stderr") of run of name to w as it is written, from its
// first byte, and returns once the run has exited and everything it wrote has been copied.
func (c *Client) Output(ctx context.Context, name string, run int, stream string, w io.Writer) error {
	resp, err := c.do(ctx, http.MethodGet, runPath(name, run, "output"), url.Values{"stream": {stream}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// Signal sends sig to the process group of name's current run; name "" signals every running
// instance of the node.
func (c *Client) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	s, err := signalName(sig)
	if err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodPost, "/v1/signal", url.Values{"name": {name}, "sig": {s}}, nil, nil)
}

// Stop sends SIGTERM to the current run's process group, SIGKILL after grace, and returns how
// it exited.
func (c *Client) Stop(ctx context.Context, name string, grace time.Duration) (Exit, error) {
	var ex Exit
	err := c.doJSON(ctx, http.MethodPost, "/v1/instances/"+url.PathEscape(name)+"/stop", url.Values{"grace": {grace.String()}}, nil, &ex)
	return ex, err
}

// Push copies the path src of this host (a file or a directory tree) to dst in the pod.
func (c *Client) Push(ctx context.Context, src, dst string) error {
	if !strings.HasPrefix(src, "/") || !strings.HasPrefix(dst, "/") {
		return fmt.Errorf("push %s to %s: want absolute paths", src, dst)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, src)) }()
	err := c.doJSON(ctx, http.MethodPut, "/v1/files", url.Values{"path": {dst}}, pr, nil)
	pr.CloseWithError(io.ErrClosedPipe)
	return err
}

// Pull copies the path src of the pod into dst on this host, replacing existing files.
func (c *Client) Pull(ctx context.Context, src, dst string) error {
	if !strings.HasPrefix(src, "/") || !strings.HasPrefix(dst, "/") {
		return fmt.Errorf("pull %s to %s: want absolute paths", src, dst)
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/files", url.Values{"path": {src}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := extractTar(resp.Body, dst); err != nil {
		return fmt.Errorf("pull %s: %w", src, err)
	}
	return nil
}

// Sample measures the node pod now.
func (c *Client) Sample(ctx context.Context) (Sample, error) {
	var s Sample
	err := c.doJSON(ctx, http.MethodGet, "/v1/sample", nil, nil, &s)
	return s, err
}

// Dial opens a connection from inside the pod to addr: a request to the agent upgraded to the
// dialled connection's byte stream.
func (c *Client) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.base.Host)
	if err != nil {
		return nil, fmt.Errorf("agent at %s: %w", c.base.Host, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req, _ := http.NewRequest(http.MethodGet, c.url("/v1/dial", url.Values{"network": {network}, "addr": {addr}}), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", tunnelProtocol)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dial %s through the agent: %w", addr, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dial %s through the agent: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("dial %s through the agent: %w", addr, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		conn.Close()
		return nil, fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	if !stop() { // ctx ended just now: the deadline was set to the past
		conn.Close()
		return nil, fmt.Errorf("dial %s through the agent: %w", addr, ctx.Err())
	}
	_ = conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, nil
}
