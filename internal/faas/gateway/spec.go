package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
)

// specKey is one key of the --function form and the Function field it sets (a *string,
// *int, *float64, *bool or *time.Duration).
type specKey struct {
	key   string
	field func(f *Function) any
}

// specKeys are the --function form's keys, in the order Format writes them.
var specKeys = []specKey{
	{"name", func(f *Function) any { return &f.Name }},
	{"handler", func(f *Function) any { return &f.Handler }},
	{"url", func(f *Function) any { return &f.URL }},
	{"mode", func(f *Function) any { return &f.Mode }},
	{"server", func(f *Function) any { return &f.Server }},
	{"replicas", func(f *Function) any { return &f.Replicas }},
	{"min", func(f *Function) any { return &f.MinReplicas }},
	{"max", func(f *Function) any { return &f.MaxReplicas }},
	{"scaler", func(f *Function) any { return &f.Scaler }},
	{"rps_threshold", func(f *Function) any { return &f.RPSThreshold }},
	{"rps_window", func(f *Function) any { return &f.RPSWindow }},
	{"idle_timeout", func(f *Function) any { return &f.IdleTimeout }},
	{"exec_timeout", func(f *Function) any { return &f.ExecTimeout }},
	{"max_inflight", func(f *Function) any { return &f.MaxInflight }},
	{"zygote", func(f *Function) any { return &f.Zygote }},
	{"cpu_threshold", func(f *Function) any { return &f.CPUThreshold }},
	{"cpu_window", func(f *Function) any { return &f.CPUWindow }},
	{"cpu_step", func(f *Function) any { return &f.CPUStep }},
	{"cpu_limit", func(f *Function) any { return &f.CPULimit }},
	{"target_concurrency", func(f *Function) any { return &f.TargetConcurrency }},
	{"stable_window", func(f *Function) any { return &f.StableWindow }},
	{"panic_window", func(f *Function) any { return &f.PanicWindow }},
}

func keyNames() string {
	names := make([]string, len(specKeys))
	for i, k := range specKeys {
		names[i] = k.key
	}
	return strings.Join(names, ", ")
}

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

func setField(field any, v string) error {
	var err error
	switch p := field.(type) {
	case *string:
		*p = v
	case *int:
		*p, err = strconv.Atoi(v)
	case *float64:
		*p, err = strconv.ParseFloat(v, 64)
	case *bool:
		*p, err = strconv.ParseBool(v)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	}
	return err
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
