package kinds

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/continuum-project/continuum/internal/app/appcmd"
	"github.com/continuum-project/continuum/internal/app/compose"
	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

// configImage is an image with cfg and no layers (only its config is read here).
func configImage(t *testing.T, cfg v1.Config) v1.Image {
	t.Helper()
	img, err := mutate.Config(empty.Image, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// writeLayout writes an OCI layout at dir/name holding img named name; it returns the
// layout's path relative to dir.
func writeLayout(t *testing.T, dir, name string, img v1.Image) string {
	t.Helper()
	p, err := layout.Write(filepath.Join(dir, name), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": name})); err != nil {
		t.Fatal(err)
	}
	return name
}

// pushImage serves an in-process registry holding an image with cfg; it returns its reference.
func pushImage(t *testing.T, cfg v1.Config) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/app:1"
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, configImage(t, cfg)); err != nil {
		t.Fatal(err)
	}
	return ref
}

// prepared decodes a container config and prepares it as the scenario loader does.
func prepared(t *testing.T, dir, src string) (*kind.Kind, any) {
	t.Helper()
	k, cfg := kindtest.Decode(t, "app-container", src)
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	if err := k.Prepare(cfg, dir); err != nil {
		t.Fatal(err)
	}
	return k, cfg
}

// TestContainerImageConfig: the image's EXPOSEd ports are the endpoints when none are declared
// (named <protocol>-<port>), its HEALTHCHECK the readiness (run inside the container with its
// timing, the config's fields over it), its STOPSIGNAL the stop signal; declared endpoints,
// ready, and healthcheck disable/NONE win.
func TestContainerImageConfig(t *testing.T) {
	dir := t.TempDir()
	health := &v1.HealthConfig{Test: []string{"CMD-SHELL", "wget -q -O- localhost:8080/health"}, Interval: 2 * time.Second,
		Timeout: 3 * time.Second, StartPeriod: 10 * time.Second, Retries: 4}
	exposed := map[string]struct{}{"9090": {}, "8080/tcp": {}, "53/udp": {}}
	checked := writeLayout(t, dir, "checked", configImage(t, v1.Config{Cmd: []string{"serve"}, ExposedPorts: exposed, Healthcheck: health,
		StopSignal: "SIGINT", Shell: []string{"/bin/bash", "-c"}}))
	plain := writeLayout(t, dir, "plain", configImage(t, v1.Config{Cmd: []string{"serve"}, ExposedPorts: exposed}))
	bare := writeLayout(t, dir, "bare", configImage(t, v1.Config{Cmd: []string{"serve"}}))
	env := kind.Env{Instance: "web", Node: "edge", Binary: "/bin/continuum", ScenarioDir: dir}

	k, cfg := prepared(t, dir, "image: "+checked)
	want := []kind.Endpoint{{Name: "udp-53", Protocol: "udp", Port: 53}, {Name: "tcp-8080", Protocol: "tcp", Port: 8080}, {Name: "tcp-9090", Protocol: "tcp", Port: 9090}}
	if eps := k.EndpointsOf(cfg); len(eps) != 3 || eps[0] != want[0] || eps[1] != want[1] || eps[2] != want[2] {
		t.Errorf("endpoints %+v, want the image's EXPOSE %+v", eps, want)
	}
	// A workload that speaks http reaches it through the first tcp port, unrepeated.
	wenv := kind.Env{Components: map[string]kind.Component{"web": kindtest.Component(t, "edge", "app-container", cfg)}}
	if node, ep, err := wenv.Endpoint("web", 0, kind.ProtocolHTTP); err != nil || node != "edge" || ep.Port != 8080 || ep.Protocol != kind.ProtocolHTTP {
		t.Errorf("http-load's endpoint: %s %+v %v", node, ep, err)
	}
	cmd, err := k.Command(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := cmd.Ready
	if r == nil || cmd.ReadyAddr != "" {
		t.Fatalf("ready %+v addr %q: want the image's HEALTHCHECK", r, cmd.ReadyAddr)
	}
	probe := strings.Join(r.Exec, " ")
	if want := "/bin/continuum container-exec --id web --timeout 3s -- /bin/bash -c wget -q -O- localhost:8080/health"; probe != want {
		t.Errorf("probe %q, want %q (the image's shell for CMD-SHELL)", probe, want)
	}
	if r.Interval != 2*time.Second || r.StartPeriod != 10*time.Second || r.StartInterval != 5*time.Second || r.Retries != 4 || r.Timeout != 0 || r.TryTimeout <= 3*time.Second {
		t.Errorf("timing %+v: the image's, Docker's start interval", r)
	}
	if cmd.StopSignal != syscall.SIGINT {
		t.Errorf("stop signal %v, want the image's SIGINT", cmd.StopSignal)
	}

	// The config's fields override the image's; a CMD test runs as it is.
	_, cfg = prepared(t, dir, "image: "+checked+"\nhealthcheck: {test: [CMD, /probe, -v], interval: 1s, retries: 2}")
	cmd, _ = k.Command(env, cfg)
	if r := cmd.Ready; r == nil || !strings.HasSuffix(strings.Join(r.Exec, " "), "--timeout 3s -- /probe -v") || r.Interval != time.Second || r.Retries != 2 || r.StartPeriod != 10*time.Second {
		t.Errorf("overridden health check %+v", cmd.Ready)
	}
	// Disabled (either way): the default readiness, a connect to the first tcp port.
	for _, hc := range []string{"{disable: true}", "{test: [NONE]}"} {
		_, cfg = prepared(t, dir, "image: "+checked+"\nhealthcheck: "+hc)
		if cmd, _ := k.Command(env, cfg); cmd.Ready != nil || cmd.ReadyAddr != "127.0.0.1:8080" {
			t.Errorf("healthcheck %s: ready %+v addr %q", hc, cmd.Ready, cmd.ReadyAddr)
		}
	}
	// ready given: it, not the image's check.
	_, cfg = prepared(t, dir, "image: "+checked+"\nready: {tcp: 7000}")
	if cmd, _ := k.Command(env, cfg); cmd.ReadyAddr != "127.0.0.1:7000" || cmd.Ready == nil || len(cmd.Ready.Exec) != 0 {
		t.Errorf("ready: %+v addr %q", cmd.Ready, cmd.ReadyAddr)
	}
	// A health check without test and no image's: none; the image's EXPOSE gives the readiness.
	_, cfg = prepared(t, dir, "image: "+plain+"\nhealthcheck: {interval: 1s}")
	if cmd, _ := k.Command(env, cfg); cmd.Ready != nil || cmd.ReadyAddr != "127.0.0.1:8080" {
		t.Errorf("plain image: ready %+v addr %q", cmd.Ready, cmd.ReadyAddr)
	}
	// Declared endpoints win over EXPOSE.
	_, cfg = prepared(t, dir, "image: "+plain+"\nendpoints: [{name: api, protocol: http, port: 7070}]")
	if eps := k.EndpointsOf(cfg); len(eps) != 1 || eps[0].Port != 7070 {
		t.Errorf("declared endpoints %+v", eps)
	}
	if cmd, _ := k.Command(env, cfg); cmd.ReadyAddr != "127.0.0.1:7070" {
		t.Errorf("declared endpoints: ready addr %q", cmd.ReadyAddr)
	}
	// Nothing exposed, no check: ready once started.
	_, cfg = prepared(t, dir, "image: "+bare)
	if cmd, _ := k.Command(env, cfg); cmd.Ready != nil || cmd.ReadyAddr != "" || len(k.EndpointsOf(cfg)) != 0 {
		t.Errorf("bare image: ready %+v addr %q", cmd.Ready, cmd.ReadyAddr)
	}
	// From a registry too.
	ref := pushImage(t, v1.Config{Cmd: []string{"serve"}, ExposedPorts: map[string]struct{}{"6379/tcp": {}}})
	_, cfg = prepared(t, dir, "image: "+ref)
	if eps := k.EndpointsOf(cfg); len(eps) != 1 || eps[0] != (kind.Endpoint{Name: "tcp-6379", Protocol: "tcp", Port: 6379}) {
		t.Errorf("registry image's endpoints %+v", eps)
	}
}

func TestContainerHealthcheckRefusals(t *testing.T) {
	for src, want := range map[string]string{
		"image: a\nhealthcheck: {test: [CURL, x]}":                 "want [CMD, program, args...]",
		"image: a\nhealthcheck: {test: [CMD]}":                     "want [CMD",
		"image: a\nhealthcheck: {test: [NONE, x]}":                 "want [CMD",
		"image: a\nhealthcheck: {test: [CMD, x], disable: true}":   "disable and a test",
		"image: a\nhealthcheck: {interval: -1s}":                   "healthcheck.interval: -1s: must be positive",
		"image: a\nhealthcheck: {retries: -1}":                     "healthcheck.retries: -1: must be positive",
		"image: a\nhealthcheck: {test: [CMD, x]}\nready: {tcp: 1}": "healthcheck and ready: give one",
		"image: a\nhealthcheck: {intervall: 1s}":                   "intervall",
	} {
		err := decodeErrKind(t, "container", src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", src, err, want)
		}
	}
}

// TestFogifyScenarioLoads: what `continuum convert fogify` prints is a scenario the loader
// takes as it is (topology, links, container components with the image's EXPOSE as endpoints).
func TestFogifyScenarioLoads(t *testing.T) {
	dir := t.TempDir()
	writeLayout(t, dir, "app", configImage(t, v1.Config{Cmd: []string{"serve"}, ExposedPorts: map[string]struct{}{"8080/tcp": {}}}))
	file := filepath.Join(dir, "docker-compose.yaml")
	if err := os.WriteFile(file, []byte(`
services:
  server: {image: app}
  client: {image: app, depends_on: [server]}
x-fogify:
  nodes: [{name: big, capabilities: {processor: {cores: 2}, memory: 1G}}, {name: small, capabilities: {processor: {cores: 0.5}, memory: 256M}}]
  networks: [{name: wan, bidirectional: {bandwidth: 10Mbps, drop: 0.5%, latency: {delay: 40ms, deviation: 2ms}}}]
  topology:
    - {label: cloud, service: server, node: big, networks: [wan]}
    - {label: devices, service: client, node: small, replicas: 3, networks: [wan]}
x-continuum: {images: {app: app}, duration: 15s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := compose.Fogify(context.Background(), file, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := experiment.ParseScenario(filepath.Join(dir, "scenario.yaml"), out, nil)
	if err != nil {
		t.Fatalf("the converted scenario does not load: %v\n%s", err, out)
	}
	if len(sc.Topology.Nodes) != 4 || len(sc.Topology.Links) != 6 || len(sc.Components) != 4 {
		t.Errorf("nodes %d links %d components %d, want 4, 6 (every pair on wan), 4", len(sc.Topology.Nodes), len(sc.Topology.Links), len(sc.Components))
	}
	if l := sc.Topology.Links[0]; l.Delay.Duration != 40*time.Millisecond || l.Jitter.Duration != 2*time.Millisecond {
		t.Errorf("link %+v: want wan's 40 ms and 2 ms deviation", l)
	}
	k, _ := kind.Lookup("app-container")
	if eps := k.EndpointsOf(sc.Components[0].DecodedConfig); len(eps) != 1 || eps[0].Name != "tcp-8080" {
		t.Errorf("%s's endpoints %+v: the image's EXPOSE", sc.Components[0].Name, eps)
	}
}

func TestParseVolumeOptions(t *testing.T) {
	for v, want := range map[string]oci.Mount{
		"d:/x":         {Source: "d", Destination: "/x"},
		"d:/x:ro":      {Source: "d", Destination: "/x", ReadOnly: true},
		"d:/x:copy":    {Source: "d", Destination: "/x", Copy: true},
		"d:/x:ro,copy": {Source: "d", Destination: "/x", ReadOnly: true, Copy: true},
		"d:/x:copy,rw": {Source: "d", Destination: "/x", Copy: true},
	} {
		if m, err := appcmd.ParseVolume(v); err != nil || m != want {
			t.Errorf("%s: %+v %v, want %+v", v, m, err, want)
		}
	}
}

// TestContainerOldName: a scenario that still says kind container loads as an app-container,
// with one warning naming the new name (no shipped scenario has a container to test it in).
func TestContainerOldName(t *testing.T) {
	dir := t.TempDir()
	img := writeLayout(t, dir, "app", configImage(t, v1.Config{Cmd: []string{"serve"}}))
	src := `version: 1
name: old
duration: 10s
topology: {nodes: [{name: edge}]}
components:
  - {name: web, kind: container, node: edge, config: {image: ` + img + `}}
`
	sc, err := experiment.ParseScenario(filepath.Join(dir, "scenario.yaml"), []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Components[0].Kind != "app-container" {
		t.Errorf("kind %q, want app-container", sc.Components[0].Kind)
	}
	if len(sc.Warnings) != 1 || !strings.Contains(sc.Warnings[0], `"container" is deprecated, use "app-container"`) {
		t.Errorf("warnings %q, want one naming app-container", sc.Warnings)
	}
}
