package shareddatacmd

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/shareddata/pace"
)

// What PaceFlags.Args renders, `continuum pace <role>` parses back into the config it rendered,
// also where the class's metrics size or period differ from the flags' defaults.
func TestPaceFlagsArgsParseBack(t *testing.T) {
	for _, tt := range []struct {
		name        string
		role, class string
		size        int
		period      time.Duration
	}{
		{"defaults", pace.RoleProducer, "pulse", 1000, time.Second},
		{"the class's", pace.RoleConsumer, "wave", 100_000, 100 * time.Millisecond},
		{"the defaults' on another class", pace.RoleProducer, "wave", 1000, time.Second},
		{"another class's", pace.RoleConsumer, "ping", 100_000, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := DefaultPaceFlags(tt.role)
			f.Class, f.MetricsSize, f.Period = tt.class, tt.size, tt.period
			f.Group, f.ID, f.Store.Endpoints = "g1", "x1", []string{"http://a:2379", "http://b:2379"}
			f.Warmup = 5 * time.Second
			args, err := f.Args()
			if err != nil {
				t.Fatal(err)
			}
			parsed := DefaultPaceFlags(tt.role)
			fs := pflag.NewFlagSet("pace", pflag.ContinueOnError)
			parsed.Bind(fs)
			if err := fs.Parse(args); err != nil {
				t.Fatalf("parse %q: %v", args, err)
			}
			got, err := parsed.config(fs.Changed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, f.Config) {
				t.Errorf("args %q parse back into\n%+v\nwant\n%+v", args, got, f.Config)
			}
		})
	}
	// A producer has no consumer flags: they are not rendered whatever their values.
	f := DefaultPaceFlags(pace.RoleProducer)
	f.Mode = pace.ModeAtomic
	if args, _ := f.Args(); slices.Contains(args, "--mode") {
		t.Errorf("producer args %q have --mode", args)
	}
}
