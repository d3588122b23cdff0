package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
)

// specKey is one key of the --function form, the Function field it sets (a *string, *int,
// *float64, *bool or *time.Duration) and its line in the help (FunctionKeysHelp), so that the
// parser and the help cannot disagree on which keys exist.
type specKey struct {
	key   string
	field func(f *Function) any
	help  string
}

// specKeys are the --function form's keys, in the order Format writes them and the help lists
// them.
var specKeys = []specKey{
	{"name", func(f *Function) any { return &f.Name }, "the function's name: /function/NAME (a DNS label)"},
	{"handler", func(f *Function) any { return &f.Handler }, "the function's folder (handler.py)"},
	{"url", func(f *Function) any { return &f.URL }, "instead of handler: http://host:port of a server that runs already (one instance, not scaled)"},
	{"mode", func(f *Function) any { return &f.Mode }, "how instances run the handler: " + faas.ModeHTTP + " (one long-lived process; default) or " + faas.ModeClassic + " (a process per request)"},
	{"server", func(f *Function) any { return &f.Server }, "http mode's upstream server: " + faas.ServerContinuum + " (default) or " + faas.ServerFlask},
	{"replicas", func(f *Function) any { return &f.Replicas }, "instances to start with (default min, at least 1 unless idle_timeout allows 0)"},
	{"min", func(f *Function) any { return &f.MinReplicas }, "fewest instances (0 allows scale to zero)"},
	{"max", func(f *Function) any { return &f.MaxReplicas }, "most instances (default 20)"},
	{"scaler", func(f *Function) any { return &f.Scaler }, "autoscaler: " + strings.Join(Scalers, ", ") + " (default " + ScalerNone + ")"},
	{"rps_threshold", func(f *Function) any { return &f.RPSThreshold }, "rps scaler: requests per second above which to scale up (default 5)"},
	{"rps_window", func(f *Function) any { return &f.RPSWindow }, "rps scaler: how long the rate must stay above (default 5s)"},
	{"idle_timeout", func(f *Function) any { return &f.IdleTimeout }, "with min=0: scale to zero after this long without a request (a duration, e.g. 30s)"},
	{"exec_timeout", func(f *Function) any { return &f.ExecTimeout }, "longest request in an instance, and longest wait for one (a duration; default 1m)"},
	{"max_inflight", func(f *Function) any { return &f.MaxInflight }, "requests under way per instance (0: no limit)"},
	{"zygote", func(f *Function) any { return &f.Zygote }, "true: fork instances from a process that imported the handler once (fast cold starts)"},
	{"cpu_threshold", func(f *Function) any { return &f.CPUThreshold }, "cpu scaler: mean CPU share of an instance's limit above which to scale up, 0 to 1 (default 0.85)"},
	{"cpu_window", func(f *Function) any { return &f.CPUWindow }, "cpu scaler: how long CPU must stay above (default 60s)"},
	{"cpu_step", func(f *Function) any { return &f.CPUStep }, "cpu scaler: instances added per step (default 4)"},
	{"cpu_limit", func(f *Function) any { return &f.CPULimit }, "cpu scaler: an instance's CPU limit in cores (default 1)"},
	{"target_concurrency", func(f *Function) any { return &f.TargetConcurrency }, "concurrency scaler: requests under way per instance to aim for (default 1)"},
	{"stable_window", func(f *Function) any { return &f.StableWindow }, "concurrency scaler: window of the mean it scales on (default 60s)"},
	{"key_file", func(f *Function) any { return &f.KeyFile }, "a file holding a key callers must send as Authorization: Bearer KEY (default: the function is public)"},
	{"panic_window", func(f *Function) any { return &f.PanicWindow }, "concurrency scaler: short window that scales up at once on a burst (default stable_window/10)"},
}

// FunctionKeys are the keys --function accepts, in order.
func FunctionKeys() []string {
	names := make([]string, len(specKeys))
	for i, k := range specKeys {
		names[i] = k.key
	}
	return names
}

// FunctionKeysHelp describes every key --function accepts, one indented line each, for the
// command's help: it is written from the same table ParseFunction reads.
func FunctionKeysHelp() string {
	width := 0
	for _, k := range specKeys {
		width = max(width, len(k.key))
	}
	var b strings.Builder
	for _, k := range specKeys {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, k.key, k.help)
	}
	return b.String()
}

func keyNames() string { return strings.Join(FunctionKeys(), ", ") }

// ParseFunction reads a function from the --function form: comma-separated key=value pairs,
//
//	name=analytics,handler=python/functions/iot-analytics,mode=http,scaler=rps,max=20
//
// with the keys of specKeys (url instead of handler for a server that runs already). The
// handler is resolved to an absolute path; the function is validated.
func ParseFunction(s string) (*Function, error) {
	f := &Function{Mode: faas.ModeHTTP, Server: faas.ServerContinuum}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("function %q: %q is not key=value", s, kv)
		}
		var field any
		for _, sk := range specKeys {
			if sk.key == k {
				field = sk.field(f)
			}
		}
		if field == nil {
			return nil, fmt.Errorf("function %q: unknown key %q (want %s)", s, k, keyNames())
		}
		if err := setField(field, v); err != nil {
			return nil, fmt.Errorf("function %q: %s: %w", s, k, err)
		}
	}
	if f.Handler != "" {
		h, err := faas.ResolveHandler(f.Handler)
		if err != nil {
			return nil, err
		}
		f.Handler = h
	}
	return f, f.Validate()
}

// setField parses v into field; its errors say what the key wants, not strconv's or time's
// wording ("missing unit in duration").
func setField(field any, v string) error {
	var err error
	var want string
	switch p := field.(type) {
	case *string:
		*p = v
	case *int:
		*p, err = strconv.Atoi(v)
		want = "a whole number, e.g. 4"
	case *float64:
		*p, err = strconv.ParseFloat(v, 64)
		want = "a number, e.g. 0.85"
	case *bool:
		*p, err = strconv.ParseBool(v)
		want = "true or false"
	case *time.Duration:
		*p, err = time.ParseDuration(v)
		want = "a duration with a unit, e.g. 30s or 500ms"
		if _, nerr := strconv.ParseFloat(v, 64); err != nil && nerr == nil {
			want += " (" + v + "s for seconds)"
		}
	}
	if err != nil {
		return fmt.Errorf("%q: want %s", v, want)
	}
	return nil
}

// fieldString is a field's value in the --function form; "" for a zero number, duration or
// false (left out).
func fieldString(field any) string {
	switch p := field.(type) {
	case *string:
		return *p
	case *int:
		if *p != 0 {
			return strconv.Itoa(*p)
		}
	case *float64:
		if *p != 0 {
			return strconv.FormatFloat(*p, 'g', -1, 64)
		}
	case *bool:
		if *p {
			return "true"
		}
	case *time.Duration:
		if *p != 0 {
			return p.String()
		}
	}
	return ""
}

// Format is the --function form of f (ParseFunction's inverse for a validated function).
func (f *Function) Format() string {
	if f.URL != "" {
		return "name=" + f.Name + ",url=" + f.URL
	}
	var parts []string
	for _, sk := range specKeys {
		if v := fieldString(sk.field(f)); v != "" || sk.key == "min" || sk.key == "replicas" {
			if v == "" {
				v = "0"
			}
			parts = append(parts, sk.key+"="+v)
		}
	}
	return strings.Join(parts, ",")
}
