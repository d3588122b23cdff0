package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testenv"
)

// fakePlatform starts an instance as an HTTP server answering /_/health on 127.0.0.1 and the
// port of its command line's listen address (unless refuse is set), returns "localhost" as its
// host and says instances share the caller's network when shared is set; it records what it
// was asked.
type fakePlatform struct {
	refuse, shared bool

	mu      sync.Mutex
	specs   []platform.InstanceSpec
	stopped map[string]time.Duration
	servers map[string]*http.Server
}

func (f *fakePlatform) Start(_ context.Context, s platform.InstanceSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specs = append(f.specs, s)
	if f.refuse {
		return "localhost", nil // started, never healthy
	}
	_, port, err := net.SplitHostPort(s.Args[len(s.Args)-1])
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_/metrics" { // as a watchdog counts its function's CPU
			fmt.Fprintf(w, "# TYPE %s counter\n%s 2.25\n", watchdogCPUMetric, watchdogCPUMetric)
		}
	})}
	go srv.Serve(ln)
	if f.servers == nil {
		f.servers = map[string]*http.Server{}
	}
	f.servers[s.Name] = srv
	return "localhost", nil
}

func (f *fakePlatform) Stop(_ context.Context, name string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped == nil {
		f.stopped = map[string]time.Duration{}
	}
	f.stopped[name] = grace
	if srv := f.servers[name]; srv != nil {
		srv.Close()
	}
	return nil
}

func (f *fakePlatform) State(context.Context) (platform.State, error) {
	return platform.State{Instances: []platform.InstanceState{{Name: "gw-hello-1", Running: true, CPUSeconds: 1.5}}}, nil
}

func (f *fakePlatform) Addr(node string, port int) string { return fmt.Sprintf("%s:%d", node, port) }

func (f *fakePlatform) SharesNode(string) bool { return f.shared }

// The platform provider asks its platform for an instance on the gateway's node: where that
// shares the gateway's network it listens on loopback only and is reached there (the watchdog
// checks no key: nothing else may reach it), elsewhere on every address, reached at the host
// the platform returned. It reads the instance's CPU from the platform's state (apart: from the
// watchdog's metrics) and stops it with
// the drain grace; an instance that never turns healthy is stopped and its port given back.
func TestPlatformProvider(t *testing.T) {
	fp := &fakePlatform{shared: true}
	port := testenv.FreePort(t)
	p := &PlatformProvider{Platform: fp, Node: "edge", Binary: "/bin/continuum", Prefix: "gw", BasePort: port, CPUs: 1,
		WatchdogArgs: func(fn *Function, listen, zygote string) []string { return []string{"faas", "watchdog", listen} }}
	ctx := context.Background()
	inst, err := p.Start(ctx, &Function{Name: "hello"}, "hello-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", port); inst.URL != want {
		t.Errorf("instance URL %q, want %q (loopback: it shares the gateway's network)", inst.URL, want)
	}
	s := fp.specs[0]
	if s.Name != "gw-hello-1" || s.Node != "edge" || s.CPUs != 1 || strings.Join(s.Args, " ") != fmt.Sprintf("/bin/continuum faas watchdog 127.0.0.1:%d", port) {
		t.Errorf("spec %+v: want gw-hello-1 on edge, 1 CPU, the watchdog listening on 127.0.0.1:%d", s, port)
	}
	if cpu, err := p.CPUSeconds(ctx, inst); err != nil || cpu != 1.5 {
		t.Errorf("CPUSeconds = %v, %v; want the platform's 1.5 (the instance runs in the node)", cpu, err)
	}
	if err := p.Stop(ctx, inst); err != nil {
		t.Fatal(err)
	}
	fp.shared = false
	inst, err = p.Start(ctx, &Function{Name: "hello"}, "hello-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://localhost:%d", port); inst.URL != want {
		t.Errorf("instance URL %q, want %q (the platform's host: it does not share the gateway's network)", inst.URL, want)
	}
	if s := fp.specs[1]; strings.Join(s.Args, " ") != fmt.Sprintf("/bin/continuum faas watchdog :%d", port) {
		t.Errorf("args %q: want the watchdog listening on every address, :%d", s.Args, port)
	}
	if cpu, err := p.CPUSeconds(ctx, inst); err != nil || cpu != 2.25 {
		t.Errorf("CPUSeconds = %v, %v; want the watchdog's 2.25 (the instance runs apart: no platform counts it)", cpu, err)
	}
	if err := p.Stop(ctx, inst); err != nil || fp.stopped["gw-hello-1"] != instanceStopGrace {
		t.Errorf("stop: %v; platform stops %v", err, fp.stopped)
	}

	fp.refuse = true
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := p.Start(sctx, &Function{Name: "hello"}, "hello-2"); err == nil {
		t.Fatal("an instance that never answered its health check was taken")
	}
	if _, ok := fp.stopped["gw-hello-2"]; !ok {
		t.Errorf("the unhealthy instance was not stopped: %v", fp.stopped)
	}
	if n := p.ports.held(); n != 0 {
		t.Errorf("%d ports still taken after both instances ended", n)
	}
}
