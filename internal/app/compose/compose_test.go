package compose

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"go.yaml.in/yaml/v3"
)

func convertText(t *testing.T, text string, env ...string) (map[string]any, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Convert(context.Background(), path, Options{Env: env})
	if err != nil {
		return nil, err
	}
	var sc map[string]any
	if err := yaml.Unmarshal(b, &sc); err != nil {
		t.Fatalf("the scenario is not YAML: %v\n%s", err, b)
	}
	return sc, nil
}

func components(sc map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range sc["components"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

func TestConvertMapsServices(t *testing.T) {
	sc, err := convertText(t, `
name: shop
services:
  web:
    image: shop/web:${TAG:-1}
    command: serve --port 80
    environment: {MODE: "${MODE}", FIXED: x}
    ports: ["8080:80"]
    expose: ["81"]
    depends_on:
      db: {condition: service_healthy}
      cache: {condition: service_started}
    deploy: {replicas: 2, resources: {limits: {cpus: "0.25", memory: 64M}}}
    stop_grace_period: 5s
    stop_signal: SIGINT
    volumes: ["./static:/srv:ro", "logs:/var/log", {type: volume, source: cache, target: /cache, volume: {nocopy: true}}]
  db:
    image: postgres:16
    healthcheck: {test: ["CMD-SHELL", "pg_isready -U app"], interval: 2s, retries: 5, start_period: 10s}
  cache:
    image: redis:7
volumes:
  logs: {}
  cache: {}
`, "MODE=edge")
	if err != nil {
		t.Fatal(err)
	}
	comps := components(sc)
	var names []string
	for _, c := range comps {
		names = append(names, c["name"].(string))
	}
	// depends_on order: what a service depends on comes first; replicas get numbered names.
	if strings.Join(names, " ") != "cache db web-1 web-2" {
		t.Errorf("components %v, want cache db web-1 web-2", names)
	}
	if sc["name"] != "shop" || comps[0]["node"] != DefaultNode {
		t.Errorf("scenario %v / node %v", sc["name"], comps[0]["node"])
	}
	web := comps[2]["config"].(map[string]any)
	want := map[string]string{"image": "shop/web:1", "cpus": "0.25", "memory": "67108864", "stop_grace": "5s", "stop_signal": "SIGINT"}
	for k, v := range want {
		if got := strings.TrimSpace(yamlText(web[k])); got != v {
			t.Errorf("web %s = %q, want %q", k, got, v)
		}
	}
	if yamlText(web["command"]) != "- serve\n- --port\n- \"80\"\n" {
		t.Errorf("command %q", yamlText(web["command"]))
	}
	env := web["env"].(map[string]any)
	if env["MODE"] != "edge" || env["FIXED"] != "x" {
		t.Errorf("env %v: interpolated from the environment", env)
	}
	vols := yamlText(web["volumes"])
	if !strings.Contains(vols, "/static:/srv:ro") || !strings.Contains(vols, "volumes/logs:/var/log:copy") {
		t.Errorf("volumes %s", vols)
	}
	if !strings.Contains(vols, "volumes/cache:/cache\n") || strings.Contains(vols, "/static:/srv:ro,copy") {
		t.Errorf("volumes %s: nocopy and bind mounts without copy", vols)
	}
	eps := yamlText(web["endpoints"])
	if !strings.Contains(eps, "port: 80") || !strings.Contains(eps, "port: 81") || strings.Contains(eps, "8080") {
		t.Errorf("endpoints %s: the container ports, not the published one", eps)
	}
	if yamlText(web["aliases"]) != "web: web-1\n" {
		t.Errorf("aliases %q: the service name resolves to its first replica", yamlText(web["aliases"]))
	}
	if !strings.Contains(eps, "name: tcp-80\n") {
		t.Errorf("endpoints %s: named <protocol>-<port> as an image's EXPOSEd ports", eps)
	}
	db := comps[1]["config"].(map[string]any)
	if got := yamlText(db["healthcheck"]); got != "interval: 2s\nretries: 5\nstart_period: 10s\ntest:\n    - CMD-SHELL\n    - pg_isready -U app\n" {
		t.Errorf("db healthcheck %q: the Compose fields as they are", got)
	}
}

func yamlText(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

func TestConvertExtension(t *testing.T) {
	sc, err := convertText(t, `
services:
  api:
    image: app:1
    x-continuum:
      node: cloud
      endpoints: [{name: http, protocol: http, port: 8080}]
      ready: {http: {port: 8080, path: /health}}
  sensor:
    image: app:1
x-continuum:
  images: {"app:1": images/app.tar}
  duration: 1m
  seed: 7
  topology: {nodes: [{name: edge}, {name: cloud}], links: [{between: [edge, cloud], delay: 20ms}]}
  placement: {sensor: edge}
  workloads: [{name: load, kind: http-load, node: edge, config: {targets: [{name: api, component: api}]}}]
  events: [{at: 10s, action: partition, node: cloud}]
`)
	if err != nil {
		t.Fatal(err)
	}
	comps := components(sc)
	if comps[0]["node"] != "cloud" || comps[1]["node"] != "edge" {
		t.Errorf("placement: %v %v", comps[0]["node"], comps[1]["node"])
	}
	api := comps[0]["config"].(map[string]any)
	if !strings.HasSuffix(api["image"].(string), "/images/app.tar") || api["image_name"] != "app:1" {
		t.Errorf("image %v name %v: the archive x-continuum.images names, relative to the file", api["image"], api["image_name"])
	}
	if !strings.Contains(yamlText(api["endpoints"]), "protocol: http") || api["ready"] == nil {
		t.Errorf("endpoints/ready from the service's x-continuum: %v %v", api["endpoints"], api["ready"])
	}
	for _, k := range []string{"workloads", "events", "topology"} {
		if sc[k] == nil {
			t.Errorf("%s not carried over", k)
		}
	}
	if sc["duration"] != "1m" || sc["seed"] != 7 {
		t.Errorf("duration %v seed %v", sc["duration"], sc["seed"])
	}
}

func TestConvertProfiles(t *testing.T) {
	text := `
services:
  app: {image: a}
  debug: {image: b, profiles: [debug]}
`
	sc, err := convertText(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(components(sc)); n != 1 {
		t.Errorf("%d components without the debug profile, want 1", n)
	}
	sc, err = convertText(t, text, "COMPOSE_PROFILES=debug")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(components(sc)); n != 2 {
		t.Errorf("%d components with COMPOSE_PROFILES=debug, want 2", n)
	}
}

func TestConvertRefusals(t *testing.T) {
	for text, want := range map[string]string{
		"services: {a: {build: .}}":                                                                                             "services.a.build: not supported: build the image first",
		"services: {a: {image: x, restart: always}}":                                                                            "services.a.restart: not supported: the scenario's events restart",
		"services: {a: {image: x, privileged: true}}":                                                                           "services.a.privileged: not supported",
		"services: {a: {image: x, deploy: {placement: {constraints: [a]}}}}":                                                    "deploy.placement: not supported",
		"services: {a: {image: x, deploy: {resources: {reservations: {cpus: '1'}}}}}":                                           "deploy.resources.reservations: not supported",
		"services: {a: {image: x, networks: [front]}}\nnetworks: {front: {}}":                                                   "networks.front: not supported",
		"services: {a: {image: x}}\nsecrets: {s: {file: ./s}}":                                                                  "secrets: not supported",
		"services: {a: {image: x, depends_on: [b]}, b: {image: y}}\nx-continuum: {topology: {nodes: [{name: n1}, {name: n2}]}}": "services.b: which node?",
		"services: {a: {image: x, depends_on: {b: {condition: service_healthy}}}, b: {image: y, healthcheck: {disable: true}}}": "b's healthcheck is disabled",
		"services: {a: {image: x, depends_on: {b: {condition: service_completed_successfully}}}, b: {image: y}}":                "service_completed_successfully not supported",
		"services: {a: {image: x, depends_on: [b]}, b: {image: y, depends_on: [a]}}":                                            "cycle",
		"services: {a: {image: x}}\nx-continuum: {components: []}":                                                              "the services are the components",
		"services: {a: {image: x, x-continuum: {nod: e}}}":                                                                      `unknown key "nod" (allowed: node, endpoints, ready, files)`,
	} {
		_, err := convertText(t, text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n  error %v\n  want it to say %q", text, err, want)
		}
	}
}

// writeLayout writes an OCI layout at dir holding one image per name, with that config (and
// no layers: only its config is read here).
func writeLayout(t testing.TB, dir string, images map[string]v1.Config) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range images {
		img, err := mutate.Config(empty.Image, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": name})); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConvertHealthchecks: depends_on service_healthy takes the image's HEALTHCHECK when the
// file gives none (as Docker Compose does) and is refused when neither has one; a healthcheck
// without test keeps the image's test and overrides its timing; disable: true carries over.
func TestConvertHealthchecks(t *testing.T) {
	images := filepath.Join(t.TempDir(), "images")
	writeLayout(t, images, map[string]v1.Config{
		"checked": {Cmd: []string{"serve"}, Healthcheck: &v1.HealthConfig{Test: []string{"CMD", "probe"}, Interval: time.Second}},
		"plain":   {Cmd: []string{"serve"}},
	})
	head := "x-continuum: {images: {checked: " + images + ", plain: " + images + "}}\n"
	sc, err := convertText(t, head+`services:
  a: {image: checked, depends_on: {b: {condition: service_healthy}}, healthcheck: {disable: true}}
  b: {image: checked, healthcheck: {interval: 5s, start_interval: 1s}}
`)
	if err != nil {
		t.Fatal(err)
	}
	comps := components(sc)
	if comps[0]["name"] != "b" {
		t.Fatalf("order %v", comps)
	}
	if got := yamlText(comps[0]["config"].(map[string]any)["healthcheck"]); got != "interval: 5s\nstart_interval: 1s\n" {
		t.Errorf("b's healthcheck %q: only the fields the file sets (the kind takes the test from the image)", got)
	}
	if got := yamlText(comps[1]["config"].(map[string]any)["healthcheck"]); got != "disable: true\n" {
		t.Errorf("a's healthcheck %q", got)
	}
	_, err = convertText(t, head+`services:
  a: {image: checked, depends_on: {b: {condition: service_healthy}}}
  b: {image: plain}
`)
	if err == nil || !strings.Contains(err.Error(), "b has no healthcheck (neither in the file nor in its image)") {
		t.Errorf("service_healthy on an image without HEALTHCHECK: %v", err)
	}
}
