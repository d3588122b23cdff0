package kind

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// FieldError is one problem with one key of a kind's config, in the kubelet's validation
// style: the key it is about, the command-line flag that key becomes (a scenario author who
// runs the command by hand sees the same name), and what is wrong.
type FieldError struct {
	// Key is the key's path under config: ("port", "functions[1].handler").
	Key string
	// Flag is the flag of the command the kind starts that the key becomes ("--client-port"),
	// "" when it becomes none.
	Flag string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Flag == "" {
		return e.Key + ": " + e.Msg
	}
	return e.Key + " (" + e.Flag + "): " + e.Msg
}

// FieldErrors collects every problem a kind's Validate finds, so that a scenario's author sees
// all of them at once rather than one per try. The zero value is empty and ready to use:
//
//	var errs kind.FieldErrors
//	if c.Port < 1 || c.Port > 65535 {
//		errs.Add("port", "--port", "want 1..65535, got %d", c.Port)
//	}
//	return errs.Err()
//
// The scenario loader reports each error at its key's line (errors.As finds the list in
// Validate's error).
type FieldErrors []*FieldError

// Add records a problem with key (and flag, "" when the key becomes none).
func (l *FieldErrors) Add(key, flag, format string, args ...any) {
	*l = append(*l, &FieldError{Key: key, Flag: flag, Msg: fmt.Sprintf(format, args...)})
}

// AddErr records err as a problem with key, unless it is nil. A FieldErrors err (a nested
// validator's) is merged, its keys under key.
func (l *FieldErrors) AddErr(key, flag string, err error) {
	if err == nil {
		return
	}
	var nested FieldErrors
	if errors.As(err, &nested) {
		for _, e := range nested {
			k := e.Key
			if key != "" {
				k = key + "." + k
			}
			*l = append(*l, &FieldError{Key: k, Flag: e.Flag, Msg: e.Msg})
		}
		return
	}
	*l = append(*l, &FieldError{Key: key, Flag: flag, Msg: err.Error()})
}

// Err is nil when nothing was recorded, else the list as an error.
func (l FieldErrors) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Error lists every problem, one a line.
func (l FieldErrors) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the problems to errors.Is and errors.As.
func (l FieldErrors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// CheckPort records a port outside 1..65535.
func (l *FieldErrors) CheckPort(key, flag string, p int) {
	if p < 1 || p > 65535 {
		l.Add(key, flag, "%d: must be between 1 and 65535", p)
	}
}

// CheckDataDir records a data_dir that is set but not absolute.
func (l *FieldErrors) CheckDataDir(flag, d string) {
	if d != "" && !filepath.IsAbs(d) {
		l.Add("data_dir", flag, "%q: must be an absolute path (default: the instance's results dir)", d)
	}
}

// CheckLoad records what is wrong with a load generator's rate, clients and timeout keys (the
// flags --rate, --clients, --timeout, as every load command names them): exactly one of an
// open loop (rate, in unit) and a closed loop (clients) is set, and a request's timeout is at
// most a minute.
func (l *FieldErrors) CheckLoad(rate float64, clients int, timeout time.Duration, unit string) {
	if rate < 0 {
		l.Add("rate", "--rate", "%g: must be >= 0", rate)
	}
	if clients < 0 {
		l.Add("clients", "--clients", "%d: must be >= 0", clients)
	}
	if rate >= 0 && clients >= 0 && (rate > 0) == (clients > 0) {
		l.Add("rate", "--rate", "exactly one of rate (open loop, %s) and clients (closed loop) must be > 0", unit)
	}
	if timeout <= 0 || timeout > time.Minute {
		l.Add("timeout", "--timeout", "%v: must be > 0 and <= 1m", timeout)
	}
}
