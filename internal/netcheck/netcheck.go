// Package netcheck tells a client at once that nothing listens where it was pointed, instead of
// letting it retry in silence: etcd's client dials lazily and retries until each request's
// context ends, so a wrong --endpoints showed nothing for a minute or more.
//
// It checks only that some endpoint accepts a TCP connection. A server that listens but does
// not serve yet (a kv member waiting for a leader) passes; waiting for it to answer is the
// caller's business, with its own, longer deadline.
package netcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout is Listening's timeout when it is given none.
const DefaultTimeout = 5 * time.Second

// Listening returns nil as soon as one of the endpoints accepts a TCP connection, and otherwise,
// within timeout, an error naming each endpoint, why it failed (refused, timed out, no such
// host) and what to check. Endpoints are URLs (http://host:port, https://host:port) or
// host:port; unix:// endpoints are not checked (they pass).
func Listening(ctx context.Context, endpoints []string, timeout time.Duration) error {
	if len(endpoints) == 0 {
		return errors.New("no endpoints")
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		endpoint string
		err      error
	}
	// Dial all at once: one reachable member is enough, and a blackholed one must not hold
	// the answer for the others for its whole timeout.
	results := make(chan result, len(endpoints))
	for _, ep := range endpoints {
		go func() { results <- result{ep, dial(ctx, ep)} }()
	}
	var failed []string
	for range endpoints {
		r := <-results
		if r.err == nil {
			return nil // the other dials end with ctx (cancel above); results is buffered
		}
		failed = append(failed, fmt.Sprintf("%s (%s)", r.endpoint, reason(r.err, timeout)))
	}
	if err := parent.Err(); err != nil {
		return err // Ctrl-C, not the endpoints' fault
	}
	return errors.New("nothing listens at " + strings.Join(failed, ", ") + ": check the address and port, and that the server is running and reachable from here")
}

func dial(ctx context.Context, endpoint string) error {
	addr, err := hostPort(endpoint)
	if err != nil || addr == "" {
		return err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// hostPort is the TCP address of an endpoint, "" for one that is not TCP.
func hostPort(endpoint string) (string, error) {
	if !strings.Contains(endpoint, "://") {
		return endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "unix", "unixs":
		return "", nil
	case "http", "https":
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			return net.JoinHostPort(u.Hostname(), port), nil
		}
		return u.Host, nil
	default:
		return u.Host, nil
	}
}

// reason says in a few words why a dial failed.
func reason(err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || isTimeout(err):
		return fmt.Sprintf("no answer within %v", timeout)
	case errors.As(err, &dnsErr):
		return "no such host"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	default:
		return err.Error()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
