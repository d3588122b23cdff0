package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Target performs one request of a series. Do must honour ctx's deadline and cancellation; it
// returns nil for a success and an error (classified by ClassifyError) otherwise. It is called
// from many goroutines at once.
type Target interface {
	Do(ctx context.Context) error
}

// TargetFunc adapts a function to Target.
type TargetFunc func(ctx context.Context) error

// Do calls f(ctx).
func (f TargetFunc) Do(ctx context.Context) error { return f(ctx) }

// Series is one named stream of requests (one row group in every output file). Names are used
// as HdrHistogram log tags and CSV cells, so they are restricted to [A-Za-z0-9_.-].
type Series struct {
	Name   string
	Target Target // a MixTarget splits the series into one per operation type
}

// Error types reported in stats.json, errors.csv and ClassifyError. They are stable: reports and
// scenario assertions match on them.
const (
	ErrTimeout           = "timeout"
	ErrConnectionRefused = "connection_refused"
	ErrConnectionReset   = "connection_reset"
	ErrNoRoute           = "no_route"
	ErrDNS               = "dns"
	ErrHTTP4xx           = "http_4xx"
	ErrHTTP5xx           = "http_5xx"
	ErrCanceled          = "canceled"
	ErrOther             = "other"
)

// ErrorTyper is implemented by errors that know their error type (protocol adapters use it for
// application-level failures such as HTTP status codes). ClassifyError consults it first.
type ErrorTyper interface {
	ErrorType() string
}

// ClassifyError maps a request error to one of the Err* types ("" for nil).
func ClassifyError(err error) string {
	if err == nil {
		return ""
	}
	var typed ErrorTyper
	if errors.As(err, &typed) {
		return typed.ErrorType()
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return ErrDNS
	}
	// Deadline before cancellation: a request whose own deadline passed is a timeout even if
	// the run was stopped meanwhile.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.ETIMEDOUT) {
		return ErrTimeout
	}
	if errors.Is(err, context.Canceled) {
		return ErrCanceled
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// net/http reports a connection the server closed without answering as (unexpected) EOF.
		return ErrConnectionReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ErrNoRoute
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ErrTimeout
	}
	return ErrOther
}

// slotTimeoutError is recorded for an open-loop request that could not get an in-flight slot
// before its deadline: from the caller's point of view it timed out without being sent.
type slotTimeoutError struct{}

func (slotTimeoutError) Error() string     { return "no in-flight slot before the request timeout" }
func (slotTimeoutError) ErrorType() string { return ErrTimeout }
