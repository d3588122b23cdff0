// Package appcmd is the app system's command line: `continuum container-run`, which the
// container kind starts on a node to run an OCI image with runc.
package appcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/app/oci"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/tools"
)

func init() { cli.RegisterSystem("app", newContainerRunCmd) }

// Flags are `continuum container-run`'s flags; the container kind renders its command line
// from the same struct. The container's arguments (replacing the image's Cmd) follow `--`.
type Flags struct {
	Image      string
	Pick       string
	ID         string
	Bundle     string
	Cache      string
	Entrypoint []string
	Env        []string
	Workdir    string
	User       string
	Hostname   string
	Volumes    []string
	AddHosts   []string
	Runc       string
}

// DefaultFlags are the command's defaults.
func DefaultFlags() Flags { return Flags{Bundle: "container"} }

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Image, "image", f.Image, "the image: an OCI layout directory or tar, a docker save tarball, or a registry reference")
	fs.StringVar(&f.Pick, "image-name", f.Pick, "which image of a layout holding several (its name or tag)")
	fs.StringVar(&f.ID, "id", f.ID, "the container's name for runc (default: derived from the bundle directory)")
	fs.StringVar(&f.Bundle, "bundle", f.Bundle, "directory of the container's own files: config.json, its writable layer, runc's state")
	fs.StringVar(&f.Cache, "cache", f.Cache, "where unpacked layers are kept, by digest (default: the setup cache's oci/)")
	fs.StringArrayVar(&f.Entrypoint, "entrypoint", f.Entrypoint, "replaces the image's entrypoint (repeat for each word; drops the image's command)")
	fs.StringArrayVar(&f.Env, "env", f.Env, "KEY=VALUE added to the image's environment (repeatable)")
	fs.StringVar(&f.Workdir, "workdir", f.Workdir, "working directory inside the container (default: the image's)")
	fs.StringVar(&f.User, "user", f.User, "uid[:gid] or name[:group] (default: the image's)")
	fs.StringVar(&f.Hostname, "hostname", f.Hostname, "the container's hostname (default: the node's)")
	fs.StringArrayVar(&f.Volumes, "volume", f.Volumes, "HOST_DIR:CONTAINER_DIR[:ro|rw][,copy] bound into the container (repeatable); copy fills an empty HOST_DIR with the image's content there first, as a new Docker volume")
	fs.StringArrayVar(&f.AddHosts, "add-host", f.AddHosts, "NAME:ADDRESS added to the container's /etc/hosts (repeatable)")
	fs.StringVar(&f.Runc, "runc", f.Runc, "the runc binary (default: runc in PATH)")
}

var idRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// bundleAndID are the bundle directory made absolute and the container's id: the one given, or
// one derived from the bundle's path (unique on the host as the directory is).
func bundleAndID(bundle, id string) (string, string, error) {
	abs, err := filepath.Abs(bundle)
	if err != nil {
		return "", "", err
	}
	if id == "" {
		id = strings.Trim(idRE.ReplaceAllString(abs, "-"), "-")
	}
	return abs, id, nil
}

// ParseVolume checks HOST:CONTAINER[:OPTIONS], OPTIONS a comma-separated list of ro or rw
// and copy (fill an empty HOST with the image's content at CONTAINER first, as Docker does for
// a new named volume).
func ParseVolume(v string) (oci.Mount, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
		return oci.Mount{}, fmt.Errorf("volume %q: want HOST_DIR:/CONTAINER_DIR, with options after a third colon (ro, rw, copy; e.g. :ro,copy)", v)
	}
	m := oci.Mount{Source: parts[0], Destination: parts[1]}
	if len(parts) == 3 {
		modes := 0
		for _, o := range strings.Split(parts[2], ",") {
			switch o {
			case "ro":
				m.ReadOnly = true
				modes++
			case "rw":
				modes++
			case "copy":
				m.Copy = true
			default:
				return oci.Mount{}, fmt.Errorf("volume %q: option %q: the options are ro or rw, and copy", v, o)
			}
		}
		if modes > 1 {
			return oci.Mount{}, fmt.Errorf("volume %q: ro or rw, not both", v)
		}
	}
	return m, nil
}

func newContainerRunCmd() *cobra.Command {
	flags := DefaultFlags()
	cmd := &cobra.Command{
		Use: "container-run --image IMAGE [flags] [-- ARGS...]",
		// A helper its kind runs: it works, help does not list it.
		Hidden: true,
		Short:  "Run an OCI container image with runc, in this network namespace (no Docker daemon)",
		Long: `Loads the image (an OCI layout directory or tar such as continuum image build writes, a
docker save tarball, or a registry reference), unpacks its layers once into the cache, stacks them
with overlayfs under a writable layer in --bundle, and runs the image's entrypoint and command with
runc: new PID, mount, IPC and UTS namespaces, Docker's default capabilities, the caller's network
namespace (on the testbed: the node's) and a cgroup below the caller's (the node's and the
instance's limits hold). Arguments after -- replace the image's command. Signals reach the container
(runc forwards them); the exit status is the container's. The container kind starts this on a node.`,
		Example: `  continuum container-run --image images/continuum.tar --image-name continuum -- echo --listen :8080
  continuum container-run --image localhost:5000/app:1.0 --env MODE=edge --volume data:/data`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if flags.Image == "" {
				return fmt.Errorf("--image is required: an OCI layout directory or tar, a docker save tarball, or a registry reference")
			}
			for _, h := range flags.AddHosts {
				if n, a, ok := strings.Cut(h, ":"); !ok || n == "" || net.ParseIP(a) == nil {
					return fmt.Errorf("--add-host %q: want NAME:IP", h)
				}
			}
			var mounts []oci.Mount
			for _, v := range flags.Volumes {
				m, err := ParseVolume(v)
				if err != nil {
					return err
				}
				if m.Source, err = filepath.Abs(m.Source); err != nil {
					return err
				}
				if _, err := os.Lstat(m.Source); errors.Is(err, fs.ErrNotExist) {
					m.Fresh = true
				}
				if err := os.MkdirAll(m.Source, 0o755); err != nil {
					return fmt.Errorf("volume %s: %w", v, err)
				}
				mounts = append(mounts, m)
			}
			cache := flags.Cache
			if cache == "" {
				cache = filepath.Join(tools.CacheDir(), "oci")
			}
			bundle, id, err := bundleAndID(flags.Bundle, flags.ID)
			if err != nil {
				return err
			}
			img, err := oci.Load(flags.Image, flags.Pick, cache)
			if err != nil {
				return err
			}
			o := oci.Options{Image: img, ID: id, Bundle: bundle, CacheDir: cache, Env: flags.Env,
				WorkDir: flags.Workdir, User: flags.User, Hostname: flags.Hostname, Mounts: mounts, Hosts: flags.AddHosts,
				Runc: flags.Runc, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
			if cmd.Flags().Changed("entrypoint") {
				o.Entrypoint = flags.Entrypoint
			}
			if len(args) > 0 {
				o.Cmd = args
			}
			// Signals for the container reach runc too (the platform signals the process
			// group), which forwards them; this process waits for the container's end.
			sigs := make(chan os.Signal, 8)
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
			defer signal.Stop(sigs)
			go func() {
				for range sigs {
				}
			}()
			code, err := oci.Run(context.Background(), o)
			if err != nil {
				return err
			}
			if code != 0 {
				return cli.ExitCode(code)
			}
			return nil
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
