package faascmd

import (
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// A gateway's testbed instance gets the watchdog's flags rendered from WatchdogFlags: those at
// their defaults left out, and they parse back into what the function asks for.
func TestInstanceArgs(t *testing.T) {
	fn := &gateway.Function{Name: "f", Handler: "/h", Mode: faas.ModeClassic, Server: faas.ServerContinuum,
		ExecTimeout: 5 * time.Second, MaxInflight: 0}
	got := InstanceArgs(fn, "127.0.0.1:18080", "/tmp/z.sock")
	want := []string{"faas", "watchdog", "--mode", "classic", "--handler", "/h", "--zygote", "/tmp/z.sock",
		"--listen", "127.0.0.1:18080", "--exec-timeout", "5s"}
	if !slices.Equal(got, want) {
		t.Fatalf("InstanceArgs = %q, want %q", got, want)
	}
	f := DefaultWatchdogFlags()
	fs := pflag.NewFlagSet("watchdog", pflag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(got[2:]); err != nil {
		t.Fatal(err)
	}
	if f.Mode != fn.Mode || f.Handler != fn.Handler || f.Server != fn.Server || f.Listen != "127.0.0.1:18080" ||
		f.ExecTimeout != fn.ExecTimeout || f.MaxInflight != 0 || f.Zygote != "/tmp/z.sock" || f.StartZygote {
		t.Errorf("parsed back %+v", f)
	}
	// Without a zygote, no --zygote.
	if args := InstanceArgs(fn, ":1", ""); slices.Contains(args, "--zygote") {
		t.Errorf("args %q: --zygote without a zygote", args)
	}
}
