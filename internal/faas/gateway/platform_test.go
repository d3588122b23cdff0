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

// fakePlatform starts an instance as an HTTP server answering /_/health on the port its
// command line's listen address names (unless refuse is set), on 127.0.0.1, which it returns as
// the host; it records what it was asked.
type fakePlatform struct {
	refuse bool

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
		return "127.0.0.1", nil // started, never healthy
	}
	listen := s.Args[len(s.Args)-1]
	ln, err := net.Listen("tcp", "127.0.0.1"+listen)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(ln)
	if f.servers == nil {
		f.servers = map[string]*http.Server{}
	}
	f.servers[s.Name] = srv
	return "127.0.0.1", nil
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

// The platform provider asks its platform for an instance on the gateway's node, listening on
// every address, reaches it at the host the platform returned, reads its CPU from the
// platform's state and stops it with the drain grace; an instance that never turns healthy is
// stopped and its port given back.
func TestPlatformProvider(t *testing.T) {
	fp := &fakePlatform{}
	port := testenv.FreePort(t)
	p := &PlatformProvider{Platform: fp, Node: "edge", Binary: "/bin/continuum", Prefix: "gw", BasePort: port, CPUs: 1,
		WatchdogArgs: func(fn *Function, listen, zygote string) []string { return []string{"faas", "watchdog", listen} }}
	ctx := context.Background()
	inst, err := p.Start(ctx, &Function{Name: "hello"}, "hello-1")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("http://127.0.0.1:%d", port)
	if inst.URL != want {
		t.Errorf("instance URL %q, want %q (the platform's host, the instance's port)", inst.URL, want)
	}
	s := fp.specs[0]
	if s.Name != "gw-hello-1" || s.Node != "edge" || s.CPUs != 1 || strings.Join(s.Args, " ") != fmt.Sprintf("/bin/continuum faas watchdog :%d", port) {
		t.Errorf("spec %+v: want gw-hello-1 on edge, 1 CPU, the watchdog listening on :%d", s, port)
	}
	if cpu, err := p.CPUSeconds(ctx, inst); err != nil || cpu != 1.5 {
		t.Errorf("CPUSeconds = %v, %v; want the platform's 1.5", cpu, err)
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
	if n := len(p.ports); n != 0 {
		t.Errorf("%d ports still taken after both instances ended", n)
	}
}
