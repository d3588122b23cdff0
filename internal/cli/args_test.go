package cli

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type testFlags struct {
	Name    string
	Port    int
	Linger  time.Duration
	TLS     bool
	Peers   []string
	Targets []string
	Nested  struct{ Rate float64 }
}

func defaultTestFlags() testFlags {
	return testFlags{Name: "default", Port: 2379, Linger: 3 * time.Millisecond, TLS: true}
}

func (f *testFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Name, "name", f.Name, "")
	fs.IntVar(&f.Port, "port", f.Port, "")
	fs.DurationVar(&f.Linger, "linger", f.Linger, "")
	fs.BoolVar(&f.TLS, "tls", f.TLS, "")
	fs.StringSliceVar(&f.Peers, "peers", f.Peers, "")
	fs.StringArrayVar(&f.Targets, "target", f.Targets, "")
	fs.Float64Var(&f.Nested.Rate, "rate", f.Nested.Rate, "")
}

func TestArgs(t *testing.T) {
	changed := defaultTestFlags()
	changed.Port, changed.Linger, changed.TLS = 2479, 0, false
	changed.Peers = []string{"a", "b"}
	changed.Targets = []string{"x=http://a,b", "y=http://c"}
	changed.Nested.Rate = 12.5
	for _, tt := range []struct {
		name   string
		values testFlags
		want   []string
	}{
		{"defaults render nothing", defaultTestFlags(), nil},
		{"one string", func() testFlags { f := defaultTestFlags(); f.Name = "m1"; return f }(), []string{"--name", "m1"}},
		{"every type, in declaration order", changed, []string{"--port", "2479", "--linger", "0s", "--tls=false",
			"--peers", "a,b", "--target", "x=http://a,b", "--target", "y=http://c", "--rate", "12.5"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Args(defaultTestFlags(), tt.values)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Args = %q, want %q", got, tt.want)
			}
			// What Args renders parses back into the values it rendered.
			parsed := defaultTestFlags()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			parsed.Bind(fs)
			if err := fs.Parse(got); err != nil {
				t.Fatalf("parse %q: %v", got, err)
			}
			if !reflect.DeepEqual(parsed, tt.values) {
				t.Errorf("parsed back %+v, want %+v", parsed, tt.values)
			}
		})
	}
}
