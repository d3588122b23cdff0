package kinds

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/app/appcmd"
	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/tools"
)

func init() {
	kind.Register(kind.Def[ContainerConfig]{
		Name:      "container",
		Role:      kind.RoleComponent,
		Summary:   "an OCI container image run with runc on a node (no Docker daemon): its entrypoint, env and user, with env, volumes, limits, declared endpoints, readiness and stop signal",
		Defaults:  func() *ContainerConfig { return &ContainerConfig{} },
		Validate:  (*ContainerConfig).validate,
		Command:   containerCommand,
		Endpoints: func(c *ContainerConfig) []kind.Endpoint { return c.endpoints() },
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
	// Healthcheck is a command run inside the container (as Docker's HEALTHCHECK CMD) until it
	// exits 0: the container's readiness, within HealthcheckTimeout (default 60 s).
	// Aliases are more names for components in the container's /etc/hosts (every component's
	// own name is there already, as Compose's service names resolve): alias -> component.
	Aliases            map[string]string `yaml:"aliases"`
	Healthcheck        []string          `yaml:"healthcheck"`
	HealthcheckTimeout spec.Duration     `yaml:"healthcheck_timeout"`
	Common             `yaml:",inline"`
}

func (c *ContainerConfig) validate() error {
	if c.Image == "" {
		return errors.New("image: required, an OCI layout directory or tar, a docker save tarball, or a registry reference")
	}
	for i, v := range c.Volumes {
		if _, err := appcmd.ParseVolume(v); err != nil {
			return fmt.Errorf("volumes[%d]: %w", i, err)
		}
	}
	if len(c.Healthcheck) > 0 && c.Ready != nil {
		return errors.New("healthcheck and ready: give one (healthcheck runs inside the container, ready's probes on the node)")
	}
	if c.HealthcheckTimeout.Duration < 0 {
		return fmt.Errorf("healthcheck_timeout %v: must be positive", c.HealthcheckTimeout)
	}
	for alias := range c.Aliases {
		if alias == "" || strings.ContainsAny(alias, " \t:/") {
			return fmt.Errorf("aliases: %q is not a host name", alias)
		}
	}
	if c.WorkingDir != "" && !strings.HasPrefix(c.WorkingDir, "/") {
		return fmt.Errorf("working_dir %q: an absolute path inside the container", c.WorkingDir)
	}
	return c.Common.validate()
}

// localImage is the image as a path of the runner's host, when it names one.
func localImage(env kind.Env, image string) (string, bool) {
	p := resolve(env, image)
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	return "", false
}

func containerCommand(env kind.Env, c *ContainerConfig) (kind.Command, error) {
	f := appcmd.DefaultFlags()
	f.Image, f.Pick, f.ID = c.Image, c.ImageName, env.Instance
	f.Env, f.Workdir, f.User, f.Hostname, f.Volumes = c.envList(), c.WorkingDir, c.User, env.Node, c.Volumes
	f.Entrypoint = c.Entrypoint
	f.AddHosts = hostEntries(env, c.Aliases)
	stopSignal := c.StopSignal
	if p, ok := localImage(env, c.Image); ok {
		f.Image = p
		// Loading a local image here makes `run --check` catch a wrong path or name, and gives
		// the image's own STOPSIGNAL, which Docker honours too.
		img, err := oci.Load(p, c.ImageName, filepath.Join(tools.CacheDir(), "oci"))
		if err != nil {
			return kind.Command{}, err
		}
		cfg, err := oci.Config(img)
		if err != nil {
			return kind.Command{}, fmt.Errorf("image %s: %w", c.Image, err)
		}
		if stopSignal == "" && cfg.StopSignal != "" {
			if _, err := parseSignal(cfg.StopSignal); err == nil {
				stopSignal = cfg.StopSignal
			}
		}
	} else if strings.HasPrefix(c.Image, ".") || strings.HasPrefix(c.Image, "/") {
		return kind.Command{}, fmt.Errorf("image %s: no such file or directory (relative paths are relative to the scenario file)", c.Image)
	}
	args := append([]string{env.Binary, "container-run"}, cli.Args(appcmd.DefaultFlags(), f)...)
	if len(c.Command) > 0 {
		args = append(append(args, "--"), c.Command...)
	}
	common := c.Common
	common.StopSignal = stopSignal
	cmd, err := common.command(env, args)
	if err != nil {
		return kind.Command{}, err
	}
	cmd.Image = c.image(env, f)
	if len(c.Healthcheck) > 0 {
		// Run in the instance's directory, as container-run is: the same bundle.
		ef := appcmd.DefaultExecFlags()
		ef.ID = env.Instance
		probe := append([]string{env.Binary, "container-exec"}, cli.Args(appcmd.DefaultExecFlags(), ef)...)
		cmd.ReadyAddr, cmd.Ready = "", &kind.Ready{Exec: append(append(probe, "--"), c.Healthcheck...), ExecInside: c.Healthcheck,
			Timeout: c.HealthcheckTimeout.Duration}
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
	for _, e := range c.Endpoints {
		img.Ports = append(img.Ports, e.Port)
	}
	return img
}
