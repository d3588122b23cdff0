package kinds_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

func change(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// A faas-gateway's set event scales its functions through /system/scale-function with the
// credentials the run's gateway generated into its output directory; bad changes are refused
// before anything is called, and a gateway whose credentials are not there is not called
// without them.
func TestGatewaySetScalesWithTheRunsCredentials(t *testing.T) {
	outDir := t.TempDir()
	cred, generated, err := gateway.AuthFiles{SecretDir: gateway.SecretDir(outDir)}.Load() // as the gateway's first start
	if err != nil || !generated {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(up.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{{Name: "hello", Handler: "/h", Mode: "http", MaxReplicas: 4}},
		Provider: upProvider{up.URL}, Tick: time.Hour, Auth: &cred})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))

	k, cfg := kindtest.Decode(t, "faas-gateway", "{port: "+port+", functions: [{name: hello, handler: python/functions/hello}]}")
	e := env()
	e.Nodes = map[string]string{"edge": host}
	e.OutDir = outDir
	e.Dial = (&net.Dialer{}).DialContext
	if err := k.Set(ctx, e, cfg, change(t, "{functions: [{name: hello, replicas: 3}]}")); err != nil {
		t.Fatalf("set: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, "3 ready instances of hello", func() bool {
		s := g.Status()[0]
		return s.Replicas == 3 && s.AvailableReplicas == 3
	})

	for _, c := range []struct{ change, want string }{
		{"{functions: [{name: nope, replicas: 1}]}", `no function "nope"`},
		{"{functions: [{name: hello}]}", "want replicas"},
		{"{functions: [{name: hello, replicas: -1}]}", "want replicas"},
		{"{functions: []}", "set needs functions"},
		{"{port: 9}", "set"},
	} {
		if err := k.Set(ctx, e, cfg, change(t, c.change)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("set %s: err = %v, want one with %q", c.change, err, c.want)
		}
	}
	// run --check (no Dial) checks the change and calls nothing.
	chk := env()
	if err := k.Set(ctx, chk, cfg, change(t, "{functions: [{name: hello, replicas: 2}]}")); err != nil {
		t.Errorf("set at run --check: %v", err)
	}
	// Without the run's credentials: an error naming them, no unauthenticated call.
	e.OutDir = t.TempDir()
	if err := k.Set(ctx, e, cfg, change(t, "{functions: [{name: hello, replicas: 1}]}")); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("set without credentials: %v", err)
	}
	// With another run's credentials: the gateway refuses, and the replicas stay.
	if _, _, err := (gateway.AuthFiles{SecretDir: gateway.SecretDir(e.OutDir)}).Load(); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(ctx, e, cfg, change(t, "{functions: [{name: hello, replicas: 1}]}")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("set with another run's credentials: %v, want the gateway's 401", err)
	}
	if s := g.Status()[0]; s.Replicas != 3 {
		t.Errorf("replicas %d after a refused scale, want 3", s.Replicas)
	}
}

// upProvider starts "instances" that are all one running server.
type upProvider struct{ url string }

func (p upProvider) Start(_ context.Context, _ *gateway.Function, id string) (gateway.Instance, error) {
	return gateway.Instance{ID: id, URL: p.url}, nil
}

func (upProvider) Stop(context.Context, gateway.Instance) error { return nil }
