package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// Client talks to one agent. It is safe for concurrent use.
type Client struct {
	base string // "http://127.0.0.1:PORT", no trailing slash
	hc   *http.Client
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // Dial's connection to the agent
}

// NewClientVia talks to the agent at base through connections dial opens (from inside another
// network namespace, say), its requests and Dial's streams alike.
func NewClientVia(base string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Client {
	c := NewClient(base, &http.Client{Transport: &http.Transport{DialContext: dial}})
	c.dial = dial
	return c
}

// NewClient talks to the agent at base ("http://127.0.0.1:PORT"); hc nil = a default client
// without a total timeout (Wait and Output are long requests: bound them with their ctx).
func NewClient(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimRight(base, "/"), hc: hc}
}

// APIError is an error the agent answered with.
type APIError struct {
	Status  int    // HTTP status
	Message string // the agent's error
}

func (e *APIError) Error() string { return fmt.Sprintf("agent: %s (HTTP %d)", e.Message, e.Status) }

// do sends a request and checks its status; the caller closes the body of a 2xx response.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

func readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var er httpjson.ErrorBody
	if json.Unmarshal(b, &er) != nil || er.Error == "" {
		er.Error = strings.TrimSpace(string(b))
	}
	return &APIError{Status: resp.StatusCode, Message: er.Error}
}

// call sends in as JSON (nil: no body) and decodes the answer into out (nil: discarded).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	resp, err := c.do(ctx, method, path, body, ct)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("agent %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func runPath(name string, run int) string {
	return "/instances/" + url.PathEscape(name) + "/runs/" + strconv.Itoa(run)
}

// Health checks that the agent answers.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, "/healthz", nil, nil)
}

// Start starts a new run of the instance req.Name (a name whose previous run has exited may
// start again: that is a restart) and returns its run number (1, 2, ...). Starting a name that
// is running fails.
func (c *Client) Start(ctx context.Context, req StartRequest) (int, error) {
	var out startResponse
	if err := c.call(ctx, http.MethodPost, "/instances", req, &out); err != nil {
		return 0, err
	}
	return out.Run, nil
}

// Wait blocks until that run has exited and says how.
func (c *Client) Wait(ctx context.Context, name string, run int) (Exit, error) {
	var ex Exit
	err := c.call(ctx, http.MethodGet, runPath(name, run)+"/wait", nil, &ex)
	return ex, err
}

// Output copies the stream ("stdout" or "stderr") of that run to w as it is written, from its
// first byte, and returns once the run has exited and everything it wrote has been copied.
func (c *Client) Output(ctx context.Context, name string, run int, stream string, w io.Writer) error {
	if err := validStream(stream); err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodGet, runPath(name, run)+"/output/"+stream, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("output of %s run %d (%s): %w", name, run, stream, err)
	}
	return nil
}

// Signal sends sig to the process group of instance name's current run; name "" = every running
// instance of the node (the node-level kill, pause = SIGSTOP, resume = SIGCONT faults).
func (c *Client) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	return c.call(ctx, http.MethodPost, "/signal", signalRequest{Name: name, Signal: int(sig)}, nil)
}

// Stop sends SIGTERM to the current run's process group, SIGKILL after grace (grace 0: SIGKILL
// at once), and returns its Exit (at once if it has exited already).
func (c *Client) Stop(ctx context.Context, name string, grace time.Duration) (Exit, error) {
	var ex Exit
	err := c.call(ctx, http.MethodPost, "/instances/"+url.PathEscape(name)+"/stop", stopRequest{GraceMillis: grace.Milliseconds()}, &ex)
	return ex, err
}

// Push copies the host path src (a file or a directory tree) to the path dst in the pod, as a
// tar stream (modes kept; existing files overwritten).
func (c *Client) Push(ctx context.Context, src, dst string) error {
	if !filepath.IsAbs(src) || !filepath.IsAbs(dst) {
		return fmt.Errorf("push %q to %q: both paths must be absolute", src, dst)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(writeTar(pw, src))
	}()
	resp, err := c.do(ctx, http.MethodPut, "/files?path="+url.QueryEscape(dst), pr, "application/x-tar")
	pr.CloseWithError(errors.New("request ended")) // unblocks the writer if the request stopped reading
	<-done
	if err != nil {
		return fmt.Errorf("push %s to %s: %w", src, dst, err)
	}
	resp.Body.Close()
	return nil
}

// Pull copies the path src in the pod (a file or a directory tree) to dst on this host,
// extracting the tar stream the agent sends (modes kept; existing files overwritten).
func (c *Client) Pull(ctx context.Context, src, dst string) error {
	if !filepath.IsAbs(src) || !filepath.IsAbs(dst) {
		return fmt.Errorf("pull %q to %q: both paths must be absolute", src, dst)
	}
	resp, err := c.do(ctx, http.MethodGet, "/files?path="+url.QueryEscape(src), nil, "")
	if err != nil {
		return fmt.Errorf("pull %s to %s: %w", src, dst, err)
	}
	defer resp.Body.Close()
	if err := extractTar(resp.Body, dst); err != nil {
		return fmt.Errorf("pull %s to %s: %w", src, dst, err)
	}
	return nil
}

// Sample measures the node pod now.
func (c *Client) Sample(ctx context.Context) (Sample, error) {
	var s Sample
	err := c.call(ctx, http.MethodGet, "/sample", nil, &s)
	return s, err
}

// Dial opens a connection from inside the pod to addr (e.g. "127.0.0.1:8080" or "edge:8080"):
// an HTTP request to the agent upgraded to a raw byte stream. The connection supports
// CloseWrite (a half-close the agent passes on). A far dial that fails is an *APIError whose
// message names the address.
func (c *Client) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	u, err := url.Parse(c.base)
	if err != nil {
		return nil, fmt.Errorf("agent address %q: %w", c.base, err)
	}
	dial := c.dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("dial %s via the agent: %w", addr, err)
	}
	// ctx bounds the handshake; the stream itself is the caller's.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (net.Conn, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("dial %s %s via the agent: %w", network, addr, err)
	}
	q := url.Values{"network": {network}, "addr": {addr}}
	req, err := http.NewRequest(http.MethodGet, c.base+"/dial?"+q.Encode(), nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", dialUpgrade)
	if err := req.Write(conn); err != nil {
		return fail(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		apiErr := readAPIError(resp)
		resp.Body.Close()
		stop()
		conn.Close()
		return nil, apiErr
	}
	if !stop() { // the deadline was (or is being) set: ctx ended during the handshake
		conn.Close()
		return nil, fmt.Errorf("dial %s %s via the agent: %w", network, addr, ctx.Err())
	}
	return &dialConn{Conn: conn, r: br}, nil
}

// dialConn is the upgraded connection; r holds what the agent sent after its 101 answer.
type dialConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *dialConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the connection: the far end reads EOF, and can still answer.
func (c *dialConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("connection cannot half-close")
}
