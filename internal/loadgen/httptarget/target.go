package httptarget

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// StatusError is a response with status >= 400.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP status %d", e.Code) }

// ErrorType classifies the status for loadgen.ClassifyError.
func (e *StatusError) ErrorType() string {
	if e.Code >= 500 {
		return loadgen.ErrHTTP5xx
	}
	return loadgen.ErrHTTP4xx
}

// Headers of Continuum's proxy (`continuum proxy`): a request names its service with
// ServiceHeader (or the Host header's first label), and the answer names the instance that
// served it with InstanceHeader.
const (
	ServiceHeader  = "X-Continuum-Service"
	InstanceHeader = "X-Continuum-Instance"
)

// Target sends one fixed request per Do.
type Target struct {
	client *http.Client
	method string
	url    string
	body   []byte
	opts   RequestOptions
}

// RequestOptions are what a request carries besides method, URL and body.
type RequestOptions struct {
	Host    string // Host header (default: the URL's host)
	Service string // sent as ServiceHeader when set
	// InstanceHeader is the response header naming the serving instance (DoInstance); default
	// InstanceHeader.
	InstanceHeader string
	// NewConnections: a new connection per request (Config.NewConnections).
	NewConnections bool
}

// NewTarget returns a target for method+rawURL with its own connection pool sized for
// maxConns concurrent requests. body is sent with every request (may be nil).
func NewTarget(method, rawURL string, body []byte, timeout time.Duration, maxConns int) (*Target, error) {
	return NewTargetWith(method, rawURL, body, timeout, maxConns, RequestOptions{})
}

// NewTargetWith is NewTarget with request options (Host, service header, instance header).
func NewTargetWith(method, rawURL string, body []byte, timeout time.Duration, maxConns int, opts RequestOptions) (*Target, error) {
	if err := checkURL(rawURL); err != nil {
		return nil, err
	}
	if opts.InstanceHeader == "" {
		opts.InstanceHeader = InstanceHeader
	}
	tr := newTransport(timeout, maxConns)
	tr.DisableKeepAlives = opts.NewConnections
	return &Target{client: &http.Client{Transport: tr}, method: method, url: rawURL,
		body: body, opts: opts}, nil
}

func checkURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("url %q: %w", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want http://host[:port]/path or https://...", rawURL)
	}
	return nil
}

// newTransport keeps connections alive and pools as many idle ones per host as can be in
// flight, so steady load never pays for new connections; no proxy from the environment (the
// testbed's nodes must be reached directly).
func newTransport(timeout time.Duration, maxConns int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: max(maxConns, 2),
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: timeout,
		DisableCompression:  true,
	}
}

// Do sends the request and reads the whole response, so the connection returns to the pool.
func (t *Target) Do(ctx context.Context) error {
	_, err := t.DoInstance(ctx)
	return err
}

// DoInstance is Do that also returns the instance the response names (the instance header),
// "" when there is none. It makes Target a loadgen.InstanceTarget: behind a proxy, results
// show the requests per instance.
func (t *Target) DoInstance(ctx context.Context) (string, error) {
	var body io.Reader
	if len(t.body) > 0 {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return "", err
	}
	if t.opts.Host != "" {
		req.Host = t.opts.Host
	}
	if t.opts.Service != "" {
		req.Header.Set(ServiceHeader, t.opts.Service)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return "", err
	}
	instance := resp.Header.Get(t.opts.InstanceHeader)
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return instance, &StatusError{Code: resp.StatusCode}
	}
	return instance, err
}

// Close releases idle connections.
func (t *Target) Close() { t.client.CloseIdleConnections() }

// ParseTarget splits a NAME=URL flag value.
func ParseTarget(v string) (name, rawURL string, err error) {
	name, rawURL, ok := strings.Cut(v, "=")
	if !ok || name == "" || rawURL == "" {
		return "", "", fmt.Errorf("target %q: want NAME=URL, e.g. edge=http://10.0.0.2:8080/", v)
	}
	return name, rawURL, checkURL(rawURL)
}

var _ loadgen.InstanceTarget = (*Target)(nil)
