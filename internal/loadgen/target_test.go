package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

type typedErr string

func (e typedErr) Error() string     { return string(e) }
func (e typedErr) ErrorType() string { return string(e) }

func TestClassifyError(t *testing.T) {
	opErr := func(errno error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"typed", fmt.Errorf("wrapped: %w", typedErr(ErrHTTP5xx)), ErrHTTP5xx},
		{"deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), ErrTimeout},
		{"os deadline", os.ErrDeadlineExceeded, ErrTimeout},
		{"canceled", context.Canceled, ErrCanceled},
		{"refused", opErr(syscall.ECONNREFUSED), ErrConnectionRefused},
		{"reset", opErr(syscall.ECONNRESET), ErrConnectionReset},
		{"broken pipe", opErr(syscall.EPIPE), ErrConnectionReset},
		{"eof", fmt.Errorf("read: %w", io.EOF), ErrConnectionReset},
		{"host unreachable", opErr(syscall.EHOSTUNREACH), ErrNoRoute},
		{"net unreachable", opErr(syscall.ENETUNREACH), ErrNoRoute},
		{"tcp timeout", opErr(syscall.ETIMEDOUT), ErrTimeout},
		{"dns", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, ErrDNS},
		{"other", errors.New("boom"), ErrOther},
		{"slot", slotTimeoutError{}, ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyError(tt.err); got != tt.want {
				t.Errorf("ClassifyError(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	base := DefaultConfig()
	tests := []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"default", func(*Config) {}, true},
		{"closed loop", func(c *Config) { c.Rate, c.Clients = 0, 4 }, true},
		{"both", func(c *Config) { c.Clients = 4 }, false},
		{"neither", func(c *Config) { c.Rate = 0 }, false},
		{"no duration", func(c *Config) { c.Duration = 0 }, false},
		{"warmup too long", func(c *Config) { c.Warmup = c.Duration }, false},
		{"no timeout", func(c *Config) { c.Timeout = 0 }, false},
		{"negative inflight", func(c *Config) { c.MaxInflight = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mutate(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestValidateSeries(t *testing.T) {
	nop := TargetFunc(func(context.Context) error { return nil })
	tests := []struct {
		name   string
		series []Series
		ok     bool
	}{
		{"ok", []Series{{"edge", nop}, {"cloud-1.a_b", nop}}, true},
		{"empty", nil, false},
		{"bad name", []Series{{"a b", nop}}, false},
		{"comma", []Series{{"a,b", nop}}, false},
		{"dup", []Series{{"a", nop}, {"a", nop}}, false},
		{"nil target", []Series{{"a", nil}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateSeries(tt.series); (err == nil) != tt.ok {
				t.Errorf("ValidateSeries() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
