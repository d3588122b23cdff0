// Package compose turns a Docker Compose file into a Continuum scenario: each service becomes
// `app-container` components (one per replica), ordered by depends_on, with its healthcheck as
// readiness, its limits, ports and volumes; an `x-continuum` extension places services on
// nodes and adds the topology, workloads and events (without it: one node, as Compose runs the
// file). The Compose specification's own library (compose-go) reads the file, so interpolation,
// .env files, profiles and extends behave as in Docker Compose. Keys this mapping does not
// support are refused by name, never ignored.
package compose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/tools"
)

// Extension is the name of the top-level and per-service extension.
const Extension = "x-continuum"

// DefaultNode is the only node of the topology a file without x-continuum gets.
const DefaultNode = "local"

// supported service keys and what they become; every other key set on a service is refused.
var supported = map[string]string{
	"image":             "the container's image (x-continuum.images maps it to a local archive)",
	"command":           "replaces the image's command",
	"entrypoint":        "replaces the image's entrypoint",
	"environment":       "the container's environment (env_file too)",
	"env_file":          "read into environment",
	"ports":             "endpoints on the container ports (published host ports are not needed: nodes reach each other by name)",
	"expose":            "endpoints",
	"depends_on":        "start order; condition service_started or service_healthy",
	"healthcheck":       "readiness: the test runs in the container with Docker's timing, over the image's HEALTHCHECK",
	"deploy":            "resources.limits.cpus and .memory, replicas",
	"volumes":           "bind mounts; named volumes: a directory in each instance's results, filled from the image as Docker does (nocopy honoured)",
	"working_dir":       "the working directory in the container",
	"user":              "the container's user",
	"stop_signal":       "what stops it",
	"stop_grace_period": "how long it gets before SIGKILL",
	"labels":            "kept in the Compose file only (metadata)",
	"container_name":    "kept in the Compose file only (components are named by service)",
	"profiles":          "selects services, as Compose does (COMPOSE_PROFILES)",
	"extends":           "resolved by the Compose loader",
	"networks":          "only the default network: the scenario's topology connects the nodes",
	Extension:           "per-service: node, endpoints, ready, files",
}

// Options are what a conversion takes from outside the file.
type Options struct {
	// Env is the environment interpolation and profiles read (os.Environ() if nil).
	Env []string
}

// Convert reads the Compose file at path and returns the scenario it means as YAML.
func Convert(ctx context.Context, path string, o Options) ([]byte, error) {
	proj, dir, err := load(ctx, path, o)
	if err != nil {
		return nil, err
	}
	return convert(proj, dir)
}

// load reads the Compose file at path as Docker Compose does, refusing the keys the mapping
// does not support; it returns the project and the file's directory.
func load(ctx context.Context, path string, o Options) (*types.Project, string, error) {
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, "", err
	}
	opts, err := cli.NewProjectOptions([]string{path}, cli.WithWorkingDirectory(dir), cli.WithEnv(env),
		cli.WithDotEnv, cli.WithConfigFileEnv, cli.WithDefaultProfiles(), cli.WithResolvedPaths(true))
	if err != nil {
		return nil, "", err
	}
	if p := envValue(env, "COMPOSE_PROFILES"); p != "" {
		if err := cli.WithProfiles(strings.Split(p, ","))(opts); err != nil {
			return nil, "", err
		}
	}
	model, err := opts.LoadModel(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := checkKeys(model); err != nil {
		return nil, "", err
	}
	proj, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, "", err
	}
	return proj, dir, nil
}

func envValue(env []string, k string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, k+"="); ok {
			return v
		}
	}
	return ""
}

// checkKeys refuses what the mapping would otherwise ignore: unsupported top-level sections and
// service keys, by name, with what is supported.
func checkKeys(model map[string]any) error {
	var errs []error
	for k := range model {
		switch {
		case k == "services" || k == "name" || k == "version" || k == Extension || k == "volumes":
		case k == "networks":
			if nets, ok := model[k].(map[string]any); ok {
				for n := range nets {
					if n != "default" {
						errs = append(errs, fmt.Errorf("networks.%s: not supported: the scenario's topology (x-continuum.topology) connects the nodes; only the default network is", n))
					}
				}
			}
		case strings.HasPrefix(k, "x-"):
		default:
			errs = append(errs, fmt.Errorf("%s: not supported (supported top-level keys: services, name, volumes, networks with only default, x-continuum)", k))
		}
	}
	services, _ := model["services"].(map[string]any)
	names := make([]string, 0, len(services))
	for n := range services {
		names = append(names, n)
	}
	sort.Strings(names)
	keys := make([]string, 0, len(supported))
	for k := range supported {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, n := range names {
		svc, _ := services[n].(map[string]any)
		var bad []string
		for k := range svc {
			if _, ok := supported[k]; !ok && !strings.HasPrefix(k, "x-") {
				bad = append(bad, k)
			}
		}
		sort.Strings(bad)
		for _, k := range bad {
			why := ""
			switch k {
			case "build":
				why = ": build the image first (docker build, or continuum image build) and name it in image"
			case "restart":
				why = ": the scenario's events restart components (x-continuum.events: {action: restart})"
			case "network_mode", "pid", "ipc", "privileged", "cap_add", "devices":
				why = ": containers run in their node's network namespace with Docker's default capabilities"
			}
			errs = append(errs, fmt.Errorf("services.%s.%s: not supported%s (supported: %s)", n, k, why, strings.Join(keys, ", ")))
		}
		if deploy, ok := svc["deploy"].(map[string]any); ok {
			for k := range deploy {
				if k != "resources" && k != "replicas" {
					errs = append(errs, fmt.Errorf("services.%s.deploy.%s: not supported (supported: resources.limits.cpus, resources.limits.memory, replicas)", n, k))
				}
			}
			if res, ok := deploy["resources"].(map[string]any); ok {
				for k := range res {
					if k != "limits" {
						errs = append(errs, fmt.Errorf("services.%s.deploy.resources.%s: not supported (supported: limits.cpus, limits.memory)", n, k))
					}
				}
				if lim, ok := res["limits"].(map[string]any); ok {
					for k := range lim {
						if k != "cpus" && k != "memory" {
							errs = append(errs, fmt.Errorf("services.%s.deploy.resources.limits.%s: not supported (supported: cpus, memory)", n, k))
						}
					}
				}
			}
		}
		if nets, ok := svc["networks"].(map[string]any); ok {
			for k := range nets {
				if k != "default" {
					errs = append(errs, fmt.Errorf("services.%s.networks.%s: not supported: only the default network (the topology connects the nodes)", n, k))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// serviceExt is a service's x-continuum.
type serviceExt struct {
	Node      string           `yaml:"node"`
	Endpoints []map[string]any `yaml:"endpoints"`
	Ready     map[string]any   `yaml:"ready"`
	Files     []map[string]any `yaml:"files"`
}

// projectExt is the file's x-continuum: the scenario's fields but components, plus images and
// placement.
type projectExt struct {
	Images    map[string]string `yaml:"images"`    // image reference -> local archive or layout (relative: to the file)
	Placement map[string]string `yaml:"placement"` // service -> node
	Rest      map[string]any    `yaml:",inline"`   // name, description, seed, duration, topology, workloads, events, sweep...
}

// decodeExt decodes an extension's value strictly (unknown keys are errors) into dst.
func decodeExt(src any, dst any) error {
	if src == nil {
		return nil
	}
	b, err := yaml.Marshal(src)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil {
		// yaml's "field x not found in type compose.serviceExt" names our type, not the keys.
		if _, after, ok := strings.Cut(err.Error(), "field "); ok {
			key, _, _ := strings.Cut(after, " ")
			return fmt.Errorf("unknown key %q (allowed: %s)", key, strings.Join(allowedKeys(dst), ", "))
		}
		return err
	}
	return nil
}

// allowedKeys are the yaml names of a struct's fields.
func allowedKeys(dst any) []string {
	switch dst.(type) {
	case *serviceExt:
		return []string{"node", "endpoints", "ready", "files"}
	}
	return []string{"images", "placement", "and the scenario's own fields but components"}
}

func convert(p *types.Project, dir string) ([]byte, error) {
	var ext projectExt
	if x, ok := p.Extensions[Extension]; ok {
		if err := decodeExt(x, &ext); err != nil {
			return nil, fmt.Errorf("%s: %w", Extension, err)
		}
	}
	for _, k := range []string{"components"} {
		if _, ok := ext.Rest[k]; ok {
			return nil, fmt.Errorf("%s.%s: the services are the components; add workloads and events here", Extension, k)
		}
	}
	sc := map[string]any{"version": 1, "name": p.Name, "description": "from the Compose file " + filepath.Base(p.ComposeFiles[0]),
		"duration": "30s"}
	for k, v := range ext.Rest {
		sc[k] = v
	}
	nodes := []string{DefaultNode}
	if _, ok := sc["topology"]; !ok {
		if _, ok := sc["topology_file"]; !ok {
			sc["topology"] = map[string]any{"nodes": []map[string]any{{"name": DefaultNode}}}
		} else {
			nodes = nil
		}
	} else {
		nodes = topologyNodes(sc["topology"])
	}
	order, err := startOrder(p, imageHealthcheck(p, ext, dir))
	if err != nil {
		return nil, err
	}
	replicas := map[string][]string{}
	var comps []map[string]any
	for _, name := range order {
		svc := p.Services[name]
		var sx serviceExt
		if x, ok := svc.Extensions[Extension]; ok {
			if err := decodeExt(x, &sx); err != nil {
				return nil, fmt.Errorf("services.%s.%s: %w", name, Extension, err)
			}
		}
		node := sx.Node
		if node == "" {
			node = ext.Placement[name]
		}
		if node == "" {
			if len(nodes) != 1 {
				return nil, fmt.Errorf("services.%s: which node? place it with %s.placement.%s or the service's %s.node (the topology has %d nodes)",
					name, Extension, name, Extension, len(nodes))
			}
			node = nodes[0]
		}
		cfg, err := containerConfig(name, svc, sx, ext, dir, p)
		if err != nil {
			return nil, err
		}
		n := 1
		if svc.Deploy != nil && svc.Deploy.Replicas != nil {
			n = *svc.Deploy.Replicas
		}
		for i := 1; i <= n; i++ {
			cname := name
			if n > 1 {
				cname = fmt.Sprintf("%s-%d", name, i)
			}
			replicas[name] = append(replicas[name], cname)
			comps = append(comps, map[string]any{"name": cname, "kind": "app-container", "node": node, "config": cfg})
		}
	}
	if len(comps) == 0 {
		return nil, errors.New("no services to run (check the profiles: COMPOSE_PROFILES)")
	}
	// A replicated service's name resolves to its first replica (Compose's DNS answers with all
	// of them; a hosts file can give one).
	aliases := map[string]string{}
	for svc, names := range replicas {
		if len(names) > 1 {
			aliases[svc] = names[0]
		}
	}
	if len(aliases) > 0 {
		for _, c := range comps {
			c["config"].(map[string]any)["aliases"] = aliases
		}
	}
	sc["components"] = comps
	return yaml.Marshal(sc)
}

func topologyNodes(t any) []string {
	m, _ := t.(map[string]any)
	list, _ := m["nodes"].([]any)
	var out []string
	for _, n := range list {
		if nm, ok := n.(map[string]any); ok {
			if s, ok := nm["name"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// startOrder is the services in an order where each comes after what it depends on (Compose's
// start order), refusing conditions the runner cannot honour. The runner starts components one
// by one, each once ready, so a dependency with a healthcheck is healthy before its dependants
// start (for service_started too: a stricter order than Compose's, never a looser one).
//
// imageHealth reports whether a service's image has a HEALTHCHECK.
func startOrder(p *types.Project, imageHealth func(service string) (bool, error)) ([]string, error) {
	names := make([]string, 0, len(p.Services))
	for n := range p.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for dep, d := range p.Services[n].DependsOn {
			if _, ok := p.Services[dep]; !ok {
				if !d.Required {
					continue
				}
				return nil, fmt.Errorf("services.%s.depends_on: %s is not a service here (or not in the active profiles)", n, dep)
			}
			switch d.Condition {
			case "", types.ServiceConditionStarted:
			case types.ServiceConditionHealthy:
				hc := p.Services[dep].HealthCheck
				switch {
				case hc != nil && (hc.Disable || len(hc.Test) > 0 && hc.Test[0] == "NONE"):
					return nil, fmt.Errorf("services.%s.depends_on.%s: condition service_healthy, but %s's healthcheck is disabled", n, dep, dep)
				case hc != nil && len(hc.Test) > 0:
				default:
					// As in Docker Compose, the image's HEALTHCHECK counts.
					has, err := imageHealth(dep)
					if err != nil {
						return nil, fmt.Errorf("services.%s.depends_on.%s: condition service_healthy: %w", n, dep, err)
					}
					if !has {
						return nil, fmt.Errorf("services.%s.depends_on.%s: condition service_healthy, but %s has no healthcheck (neither in the file nor in its image)", n, dep, dep)
					}
				}
			default:
				return nil, fmt.Errorf("services.%s.depends_on.%s: condition %s not supported (supported: service_started, service_healthy)", n, dep, d.Condition)
			}
		}
	}
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("depends_on has a cycle: %s", strings.Join(append(path, n), " -> "))
		case 2:
			return nil
		}
		state[n] = 1
		deps := make([]string, 0)
		for d := range p.Services[n].DependsOn {
			if _, ok := p.Services[d]; ok {
				deps = append(deps, d)
			}
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func containerConfig(name string, svc types.ServiceConfig, sx serviceExt, ext projectExt, dir string, p *types.Project) (map[string]any, error) {
	if svc.Image == "" {
		return nil, fmt.Errorf("services.%s: no image (build is not supported: build it first and name it in image)", name)
	}
	cfg := map[string]any{}
	image, pick := imageSource(svc.Image, ext, dir)
	if pick != "" {
		cfg["image_name"] = pick
	}
	cfg["image"] = image
	if svc.Entrypoint != nil {
		cfg["entrypoint"] = []string(svc.Entrypoint)
	}
	if svc.Command != nil {
		cfg["command"] = []string(svc.Command)
	}
	if len(svc.Environment) > 0 {
		env := map[string]string{}
		for k, v := range svc.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		cfg["env"] = env
	}
	if svc.WorkingDir != "" {
		cfg["working_dir"] = svc.WorkingDir
	}
	if svc.User != "" {
		cfg["user"] = svc.User
	}
	if svc.StopSignal != "" {
		cfg["stop_signal"] = svc.StopSignal
	}
	if svc.StopGracePeriod != nil {
		cfg["stop_grace"] = time.Duration(*svc.StopGracePeriod).String()
	}
	if d := svc.Deploy; d != nil && d.Resources.Limits != nil {
		if c := float64(d.Resources.Limits.NanoCPUs); c > 0 {
			cfg["cpus"] = c
		}
		if m := int64(d.Resources.Limits.MemoryBytes); m > 0 {
			cfg["memory"] = m
		}
	}
	var vols []string
	for _, v := range svc.Volumes {
		src := v.Source
		switch v.Type {
		case types.VolumeTypeBind:
		case types.VolumeTypeVolume:
			if src == "" {
				src = anonymousVolume(v.Target)
			} else if !volumeName.MatchString(src) {
				return nil, fmt.Errorf("services.%s.volumes (%s): volume name %q not allowed: a name is a letter or digit followed by letters, digits, '_', '.' or '-' (Docker's [a-zA-Z0-9][a-zA-Z0-9_.-]); it names a directory under the instance's volumes/", name, v.Target, src)
			}
			src = filepath.Join("volumes", src) // in the instance's output directory
		default:
			return nil, fmt.Errorf("services.%s.volumes (%s): type %s not supported (supported: bind, volume)", name, v.Target, v.Type)
		}
		var opts []string
		if v.ReadOnly {
			opts = append(opts, "ro")
		}
		// A named volume is new in each run: Docker fills a new one with the image's content
		// at its target (unless volume.nocopy); a bind mount is the host's as it is.
		if v.Type == types.VolumeTypeVolume && (v.Volume == nil || !v.Volume.NoCopy) {
			opts = append(opts, "copy")
		}
		s := src + ":" + v.Target
		if len(opts) > 0 {
			s += ":" + strings.Join(opts, ",")
		}
		vols = append(vols, s)
	}
	if len(vols) > 0 {
		cfg["volumes"] = vols
	}
	// Endpoints: the service's x-continuum says protocols; else one per container port, tcp.
	if len(sx.Endpoints) > 0 {
		cfg["endpoints"] = sx.Endpoints
	} else {
		type port struct {
			n     uint32
			proto string
		}
		seen := map[port]bool{}
		var eps []map[string]any
		add := func(n uint32, proto string) {
			if proto == "" {
				proto = "tcp"
			}
			if n == 0 || seen[port{n, proto}] {
				return
			}
			seen[port{n, proto}] = true
			// Named as the image's EXPOSEd ports are (the container kind's tcp-8080).
			eps = append(eps, map[string]any{"name": fmt.Sprintf("%s-%d", proto, n), "protocol": proto, "port": n})
		}
		for _, pc := range svc.Ports {
			add(pc.Target, strings.ToLower(pc.Protocol))
		}
		for _, e := range svc.Expose {
			num, proto, _ := strings.Cut(e, "/")
			n, err := strconv.ParseUint(strings.SplitN(num, "-", 2)[0], 10, 16)
			if err != nil {
				return nil, fmt.Errorf("services.%s.expose: %q is not a port", name, e)
			}
			add(uint32(n), strings.ToLower(proto))
		}
		if len(eps) > 0 {
			cfg["endpoints"] = eps
		}
	}
	if len(sx.Files) > 0 {
		cfg["files"] = sx.Files
	}
	hc := svc.HealthCheck
	switch {
	case sx.Ready != nil && hc != nil && !hc.Disable && len(hc.Test) > 0 && hc.Test[0] != "NONE":
		return nil, fmt.Errorf("services.%s: a healthcheck and %s.ready: give one", name, Extension)
	case sx.Ready != nil:
		cfg["ready"] = sx.Ready
	case hc != nil:
		h, err := healthcheck(hc)
		if err != nil {
			return nil, fmt.Errorf("services.%s.healthcheck: %w", name, err)
		}
		cfg["healthcheck"] = h
	}
	return cfg, nil
}

// imageSource is where a service's image is: the local archive x-continuum.images maps it to,
// with the image of that name in it, or the reference itself.
func imageSource(image string, ext projectExt, dir string) (src, pick string) {
	if local, ok := ext.Images[image]; ok {
		if !filepath.IsAbs(local) {
			local = filepath.Join(dir, local)
		}
		return local, image
	}
	return image, ""
}

// healthcheck is the container kind's healthcheck for a Compose one: the same fields (those
// left out are the image's HEALTHCHECK's, then Docker's defaults, in the kind as in Docker).
func healthcheck(hc *types.HealthCheckConfig) (map[string]any, error) {
	if hc.Disable {
		return map[string]any{"disable": true}, nil
	}
	h := map[string]any{}
	if len(hc.Test) > 0 {
		test, err := healthTest(hc.Test)
		if err != nil {
			return nil, err
		}
		h["test"] = test
	}
	for k, d := range map[string]*types.Duration{"interval": hc.Interval, "timeout": hc.Timeout, "start_period": hc.StartPeriod, "start_interval": hc.StartInterval} {
		if d != nil {
			h[k] = time.Duration(*d).String()
		}
	}
	if hc.Retries != nil {
		h["retries"] = *hc.Retries
	}
	return h, nil
}

// healthTest checks a Compose test: [CMD, args...], [CMD-SHELL, command] (a string is
// CMD-SHELL) or [NONE], kept in that form for the kind.
func healthTest(t types.HealthCheckTest) ([]string, error) {
	switch t[0] {
	case "CMD", "CMD-SHELL":
		if len(t) < 2 {
			return nil, fmt.Errorf("test %s without a command", t[0])
		}
		return t, nil
	case "NONE":
		return t[:1], nil
	}
	return nil, fmt.Errorf("test %q: want [CMD, ...], [CMD-SHELL, ...], [NONE] or a string", t)
}

// imageHealthcheck says whether a service's image has a HEALTHCHECK of its own (not NONE):
// startOrder asks it of a service_healthy dependency without a healthcheck in the file.
func imageHealthcheck(p *types.Project, ext projectExt, dir string) func(service string) (bool, error) {
	return func(service string) (bool, error) {
		src, pick := imageSource(p.Services[service].Image, ext, dir)
		img, err := oci.Load(src, pick, filepath.Join(tools.CacheDir(), "oci"))
		if err != nil {
			return false, err
		}
		c, err := oci.ReadConfig(img)
		if err != nil {
			return false, err
		}
		return c.Health != nil && c.Health.Test[0] != "NONE", nil
	}
}
