package kinds

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/app/appcmd"
	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/tools"
)

func init() {
	kind.Register(kind.Def[ContainerConfig]{
		Name:      "app-container",
		System:    "app",
		Doc:       "docs/bring-your-own.md#app-container-an-oci-image-on-a-node",
		OldNames:  []string{"container"},
		Role:      kind.RoleComponent,
		Summary:   "an OCI container image run with runc on a node (no Docker daemon): its entrypoint, env and user, with env, volumes, limits, declared endpoints, readiness and stop signal",
		Defaults:  func() *ContainerConfig { return &ContainerConfig{} },
		Validate:  (*ContainerConfig).validate,
		Prepare:   (*ContainerConfig).prepare,
		Command:   containerCommand,
		Endpoints: (*ContainerConfig).containerEndpoints,
	})
}

// ContainerConfig is the `config:` of a container component.
type ContainerConfig struct {
	// Image is an OCI layout directory or tar, a docker save tarball (relative paths: to the
	// scenario file), or a registry reference.
	Image string `yaml:"image"`
	// ImageName picks one image of a layout that holds several (its name or tag).
	ImageName string `yaml:"image_name"`
	// Entrypoint replaces the image's (and drops its command); Command replaces its command.
	Entrypoint []string `yaml:"entrypoint"`
	Command    []string `yaml:"command"`
	WorkingDir string   `yaml:"working_dir"` // inside the container; default the image's
	User       string   `yaml:"user"`        // uid[:gid] or name[:group]; default the image's
	// Volumes bind host directories: HOST:CONTAINER[:ro], HOST relative to the instance's
	// output directory (so what the container writes there is kept with the run).
	Volumes []string `yaml:"volumes"`
	// Aliases are more names for components in the container's /etc/hosts (every component's
	// own name is there already, as Compose's service names resolve): alias -> component.
	Aliases map[string]string `yaml:"aliases"`
	// Healthcheck runs inside the container (as Docker's HEALTHCHECK): the container's
	// readiness. Its fields override the image's HEALTHCHECK, which is the default readiness.
	Healthcheck *HealthcheckConfig `yaml:"healthcheck"`
	Common      `yaml:",inline"`

	// imageConfig is what the image's config says (Prepare reads it): its EXPOSEd ports, health
	// check and stop signal; path is the image resolved against the scenario's directory.
	imageConfig *oci.ImageConfig
	path        string
}

// validate reports every problem at once, each with its key and the `continuum container-run`
// flag it becomes ("" for what the runner applies itself: limits, readiness, stop).
func (c *ContainerConfig) validate() error {
	var errs kind.FieldErrors
	if c.Image == "" {
		errs.Add("image", "--image", "required, an OCI layout directory or tar, a docker save tarball, or a registry reference")
	}
	for i, v := range c.Volumes {
		if _, err := appcmd.ParseVolume(v); err != nil {
			errs.AddErr(fmt.Sprintf("volumes[%d]", i), "--volume", err)
		}
	}
	c.Healthcheck.check(&errs)
	if h := c.Healthcheck; h != nil && c.Ready != nil && !h.Disable && (len(h.Test) == 0 || h.Test[0] != "NONE") {
		errs.Add("ready", "", "healthcheck and ready: give one (healthcheck runs inside the container, ready's probes on the node)")
	}
	for _, alias := range slices.Sorted(maps.Keys(c.Aliases)) {
		if alias == "" || strings.ContainsAny(alias, " \t:/") {
			errs.Add("aliases", "--add-host", "%q is not a host name", alias)
		}
	}
	if c.WorkingDir != "" && !strings.HasPrefix(c.WorkingDir, "/") {
		errs.Add("working_dir", "--workdir", "%q: an absolute path inside the container", c.WorkingDir)
	}
	c.Common.check(&errs, "--env")
	return errs.Err()
}

// prepare loads the image's config (a local image from the scenario's directory, or from its
// registry) so that its exposed ports are the component's endpoints when none are declared
// and its health check is the readiness: `run --check` reads it too, and catches a wrong path
// or name.
func (c *ContainerConfig) prepare(scenarioDir string) error {
	src := c.Image
	if p := resolve(kind.Env{ScenarioDir: scenarioDir}, c.Image); p != "" {
		if _, err := os.Stat(p); err == nil {
			src = p
		} else if strings.HasPrefix(c.Image, ".") || strings.HasPrefix(c.Image, "/") {
			return fmt.Errorf("image %s: no such file or directory (relative paths are relative to the scenario file)", c.Image)
		}
	}
	img, err := oci.Load(src, c.ImageName, filepath.Join(tools.CacheDir(), "oci"))
	if err != nil {
		return err
	}
	cfg, err := oci.ReadConfig(img)
	if err != nil {
		return fmt.Errorf("image %s: %w", c.Image, err)
	}
	c.imageConfig, c.path = cfg, src
	return nil
}

// containerEndpoints are the declared endpoints, else the image's EXPOSEd ports, named
// <protocol>-<port> with protocol tcp or udp: workloads that speak one TCP protocol take a tcp
// one (kind.Env.Endpoint).
func (c *ContainerConfig) containerEndpoints() []kind.Endpoint {
	if len(c.Endpoints) > 0 || c.imageConfig == nil {
		return c.endpoints()
	}
	return exposedEndpoints(c.imageConfig.Ports)
}

func exposedEndpoints(ports []oci.Port) []kind.Endpoint {
	out := make([]kind.Endpoint, 0, len(ports))
	for _, p := range ports {
		out = append(out, kind.Endpoint{Name: fmt.Sprintf("%s-%d", p.Protocol, p.Number), Protocol: p.Protocol, Port: p.Number})
	}
	return out
}

func containerCommand(env kind.Env, c *ContainerConfig) (kind.Command, error) {
	if c.imageConfig == nil { // a config the scenario loader did not prepare (tests, other callers)
		if err := c.prepare(env.ScenarioDir); err != nil {
			return kind.Command{}, err
		}
	}
	f := appcmd.DefaultFlags()
	f.Image, f.Pick, f.ID = c.path, c.ImageName, env.Instance
	f.Env, f.Workdir, f.User, f.Hostname, f.Volumes = c.envList(), c.WorkingDir, c.User, env.Node, c.Volumes
	f.Entrypoint = c.Entrypoint
	f.AddHosts = hostEntries(env, c.Aliases)
	common := c.Common
	// The image's STOPSIGNAL, which Docker honours too.
	if common.StopSignal == "" && c.imageConfig.StopSignal != "" {
		if _, err := parseSignal(c.imageConfig.StopSignal); err == nil {
			common.StopSignal = c.imageConfig.StopSignal
		}
	}
	// Endpoints from the image's EXPOSE give the default readiness a port, as declared ones do.
	if len(common.Endpoints) == 0 {
		for _, p := range c.imageConfig.Ports {
			if p.Protocol == kind.ProtocolTCP {
				common.Endpoints = []EndpointConfig{{Name: "tcp", Protocol: kind.ProtocolTCP, Port: p.Number}}
				break
			}
		}
	}
	args := append([]string{env.Binary, "container-run"}, cli.Args(appcmd.DefaultFlags(), f)...)
	if len(c.Command) > 0 {
		args = append(append(args, "--"), c.Command...)
	}
	cmd, err := common.command(env, args)
	if err != nil {
		return kind.Command{}, err
	}
	cmd.Image = c.image(env, f)
	// Readiness: ready if given, else the health check (the config's over the image's), else
	// a connect to the first TCP endpoint.
	if c.Ready == nil {
		if h := c.Healthcheck.merge(c.imageConfig.Health); h != nil {
			cmd.ReadyAddr, cmd.Ready = "", healthReady(env, h, c.imageConfig.Shell)
		}
	}
	return cmd, nil
}

// hostEntries are NAME:ADDRESS lines for every component of the run (its node's address) and
// the aliases, sorted; none when the addresses are not known yet (`run --check` knows them too).
func hostEntries(env kind.Env, aliases map[string]string) []string {
	var out []string
	for name, c := range env.Components {
		if a, ok := env.Nodes[c.Node]; ok {
			out = append(out, name+":"+a)
		}
	}
	for alias, comp := range aliases {
		if c, ok := env.Components[comp]; ok {
			if a, ok := env.Nodes[c.Node]; ok {
				out = append(out, alias+":"+a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// image is the container as a platform that runs images itself (Kubernetes) takes it: the same
// image, overrides and volumes container-run gets from f.
func (c *ContainerConfig) image(env kind.Env, f appcmd.Flags) *platform.Image {
	img := &platform.Image{Ref: f.Image, Pick: c.ImageName, Entrypoint: c.Entrypoint, EntrypointSet: len(c.Entrypoint) > 0,
		Cmd: c.Command, Env: f.Env, WorkingDir: c.WorkingDir, User: c.User, Hosts: f.AddHosts}
	for _, v := range c.Volumes {
		m, _ := appcmd.ParseVolume(v) // validated
		if !filepath.IsAbs(m.Source) {
			m.Source = filepath.Join(env.OutDir, m.Source) // container-run runs in the output directory
		}
		img.Volumes = append(img.Volumes, platform.Volume{Source: m.Source, Destination: m.Destination, ReadOnly: m.ReadOnly})
	}
	for _, e := range c.containerEndpoints() {
		img.Ports = append(img.Ports, e.Port)
	}
	return img
}
