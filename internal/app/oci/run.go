package oci

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Mount is a directory of the host bound into the container.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
	// Copy fills an empty Source with the image's content at Destination before the container
	// starts, as Docker does for a new named volume (copyUp).
	Copy bool
	// Fresh says the caller made Source for this container (it did not exist before): with
	// Copy its root then takes the image directory's owner and mode, as Docker gives a new
	// named volume, so a non-root image user can write there. A directory the user had keeps
	// its own.
	Fresh bool
}

// Options is one container run.
type Options struct {
	Image v1.Image
	// ID names the container for runc; unique among the containers running on the host.
	ID string
	// Bundle is a directory of the container's own: config.json, the overlay's upper and work
	// directories and its mount point, runc's state.
	Bundle string
	// CacheDir holds the unpacked layers (shared by every container of the host).
	CacheDir string
	// Entrypoint and Cmd replace the image's when not nil (as docker run's --entrypoint and
	// arguments do: a new entrypoint drops the image's Cmd).
	Entrypoint, Cmd []string
	Env             []string // added to the image's (same name: replaced)
	WorkDir         string   // "" = the image's, else /
	User            string   // "" = the image's: uid[:gid] or a name in the image's /etc/passwd
	Hostname        string
	Mounts          []Mount
	// Hosts are "name:address" lines added to the node's /etc/hosts in the container (Docker's
	// --add-host): the scenario's component names, as Compose's service names resolve.
	Hosts          []string
	Runc           string // path of runc ("" = looked up in PATH)
	Stdout, Stderr io.Writer
}

// Config is what the image says about how it runs (for the kind: its ports and stop signal).
func Config(img v1.Image) (*v1.Config, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	return &cf.Config, nil
}

// Run runs the container to its end and returns its exit code (128+n when killed by signal n,
// as a shell reports it). Everything it set up (the overlay mount, runc's state) is removed
// before it returns; the bundle's upper directory, the container's own writes, is kept.
// ctx ending kills the container.
func Run(ctx context.Context, o Options) (int, error) {
	cf, err := o.Image.ConfigFile()
	if err != nil {
		return -1, fmt.Errorf("image config: %w", err)
	}
	lowers, err := Unpack(o.Image, o.CacheDir)
	if err != nil {
		return -1, err
	}
	if err := ensureCgroupMounts(); err != nil {
		return -1, err
	}
	rootfs := filepath.Join(o.Bundle, "rootfs")
	upper, work := filepath.Join(o.Bundle, "upper"), filepath.Join(o.Bundle, "work")
	for _, d := range []string{rootfs, upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return -1, err
		}
	}
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", rootfs, "overlay", 0, opts); err != nil {
		return -1, fmt.Errorf("mount the image's layers (overlayfs) at %s: %w", rootfs, err)
	}
	defer func() { _ = unix.Unmount(rootfs, unix.MNT_DETACH) }()
	for _, m := range o.Mounts {
		if m.Copy {
			if err := copyUp(rootfs, m.Destination, m.Source, m.Fresh); err != nil {
				return -1, err
			}
		}
	}

	spec, err := buildSpec(o, &cf.Config, rootfs)
	if err != nil {
		return -1, err
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return -1, err
	}
	if err := os.WriteFile(filepath.Join(o.Bundle, "config.json"), b, 0o644); err != nil {
		return -1, err
	}
	runc := o.Runc
	if runc == "" {
		if runc, err = exec.LookPath("runc"); err != nil {
			return -1, errors.New("runc not found in PATH: `continuum setup kubernetes` installs it (Debian's runc), or apt-get install runc")
		}
	}
	state := filepath.Join(o.Bundle, "runc")
	cmd := exec.Command(runc, "--root", state, "run", "--bundle", o.Bundle, o.ID)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	defer func() { _ = exec.Command(runc, "--root", state, "delete", "--force", o.ID).Run() }()
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("runc: %w", err)
	}
	stop := context.AfterFunc(ctx, func() {
		_ = exec.Command(runc, "--root", state, "kill", "--all", o.ID, "KILL").Run()
	})
	defer stop()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil // runc exits with the container's status
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// buildSpec is the runtime bundle's config: the image's process in new PID, mount, IPC and UTS
// namespaces, and no network namespace of its own (it shares its caller's: the node's), with
// its cgroup below the caller's.
func buildSpec(o Options, c *v1.Config, rootfs string) (*specs.Spec, error) {
	args := append(append([]string{}, c.Entrypoint...), c.Cmd...)
	switch {
	case o.Entrypoint != nil:
		args = append(append([]string{}, o.Entrypoint...), o.Cmd...)
	case o.Cmd != nil:
		args = append(append([]string{}, c.Entrypoint...), o.Cmd...)
	}
	if len(args) == 0 {
		return nil, errors.New("the image has no entrypoint or command, and none was given")
	}
	env := mergeEnv(c.Env, o.Env)
	if !hasVar(env, "PATH") {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	cwd := o.WorkDir
	if cwd == "" {
		cwd = c.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	user := o.User
	if user == "" {
		user = c.User
	}
	uid, gid, err := resolveUser(rootfs, user)
	if err != nil {
		return nil, err
	}
	cg, err := cgroupBelowSelf(o.ID)
	if err != nil {
		return nil, err
	}
	hostname := o.Hostname
	if hostname == "" {
		hostname, _ = os.Hostname()
	}
	caps := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
		"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
		"CAP_KILL", "CAP_AUDIT_WRITE"} // Docker's default set
	s := &specs.Spec{
		Version:  specs.Version,
		Hostname: hostname,
		Root:     &specs.Root{Path: rootfs},
		Process: &specs.Process{
			Args: args, Env: env, Cwd: cwd,
			User:         specs.User{UID: uid, GID: gid},
			Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		Linux: &specs.Linux{
			CgroupsPath: cg,
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
			},
			MaskedPaths:   []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	// The node's name resolution: its hosts file (the testbed's names of every node) with the
	// added names, and its resolver.
	hosts := "/etc/hosts"
	if len(o.Hosts) > 0 {
		b, _ := os.ReadFile(hosts)
		var add strings.Builder
		add.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			add.WriteByte('\n')
		}
		for _, h := range o.Hosts {
			name, addr, _ := strings.Cut(h, ":")
			fmt.Fprintf(&add, "%s\t%s\n", addr, name)
		}
		hosts = filepath.Join(o.Bundle, "hosts")
		if err := os.WriteFile(hosts, []byte(add.String()), 0o644); err != nil {
			return nil, err
		}
	}
	for _, m := range [][2]string{{hosts, "/etc/hosts"}, {"/etc/resolv.conf", "/etc/resolv.conf"}} {
		if _, err := os.Stat(m[0]); err == nil {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: m[1], Type: "bind", Source: m[0], Options: []string{"rbind", "ro"}})
		}
	}
	for _, m := range o.Mounts {
		opt := []string{"rbind", "rw"}
		if m.ReadOnly {
			opt[1] = "ro"
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: opt})
	}
	return s, nil
}

func mergeEnv(base, add []string) []string {
	out := append([]string{}, base...)
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, e := range out {
			if ek, _, _ := strings.Cut(e, "="); ek == k {
				out[i], replaced = kv, true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

func hasVar(env []string, k string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, k+"=") {
			return true
		}
	}
	return false
}

// resolveUser turns "uid[:gid]" or "name[:group]" into ids, names from the image's /etc/passwd
// and /etc/group as a container runtime does. They are read inside the mounted rootfs as the
// container would see them (readImageFile: the image's links cannot lead to the host's files,
// and a FIFO or a huge file there is an error, not a hang); a file that cannot be read is an
// error when a name must be looked up in it.
func resolveUser(rootfs, user string) (uint32, uint32, error) {
	if user == "" {
		return 0, 0, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, gid := -1, -1
	passwd := func() ([]byte, error) { return readImageFile(rootfs, "/etc/passwd") }
	if n, err := strconv.Atoi(u); err == nil {
		uid = n
	} else if b, err := passwd(); err != nil {
		return 0, 0, fmt.Errorf("user %q: not a number, and %w", u, err)
	} else if e := scanEntries(b, func(f []string) bool { return f[0] == u }); e != nil {
		uid, _ = strconv.Atoi(e[2])
		gid, _ = strconv.Atoi(e[3])
	} else {
		return 0, 0, fmt.Errorf("user %q: not a number and not in the image's /etc/passwd", u)
	}
	if hasGroup {
		if n, err := strconv.Atoi(g); err == nil {
			gid = n
		} else if b, err := readImageFile(rootfs, "/etc/group"); err != nil {
			return 0, 0, fmt.Errorf("group %q: not a number, and %w", g, err)
		} else if e := scanEntries(b, func(f []string) bool { return f[0] == g }); e != nil {
			gid, _ = strconv.Atoi(e[2])
		} else {
			return 0, 0, fmt.Errorf("group %q: not a number and not in the image's /etc/group", g)
		}
	}
	if gid < 0 {
		gid = 0 // a numeric user the image's passwd does not name (or no readable passwd): group 0
		if b, err := passwd(); err == nil {
			if e := scanEntries(b, func(f []string) bool { return f[2] == strconv.Itoa(uid) }); e != nil {
				gid, _ = strconv.Atoi(e[3])
			}
		}
	}
	return uint32(uid), uint32(gid), nil
}

// scanEntries is the first colon-separated entry of a passwd or group file that match takes.
func scanEntries(b []byte, match func([]string) bool) []string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxImageFile)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 4 && match(fields) {
			return fields
		}
	}
	return nil
}

// cgroupBelowSelf is the cgroup path for the container: a child of the caller's own cgroup, so
// that the limits of the instance and its node hold for the container and the platform's
// accounting, signals and cleanup (which walk the tree) reach it. On cgroup v2 a cgroup with
// processes cannot delegate controllers to children, so the caller first moves itself into a
// sibling leaf, "supervisor".
func cgroupBelowSelf(id string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var v1Path, v2Path string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" {
				v1Path = parts[2]
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil { // v1 (or hybrid)
		if v1Path == "" {
			return "", errors.New("no cpu cgroup in /proc/self/cgroup")
		}
		return filepath.Join(v1Path, "container-"+id), nil
	}
	self := filepath.Join("/sys/fs/cgroup", v2Path)
	sup := filepath.Join(self, "supervisor")
	if err := os.MkdirAll(sup, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(sup, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", fmt.Errorf("cgroup v2: move into %s: %w", sup, err)
	}
	avail, _ := os.ReadFile(filepath.Join(self, "cgroup.controllers"))
	var want []string
	for _, c := range strings.Fields(string(avail)) {
		if c == "cpu" || c == "memory" || c == "pids" {
			want = append(want, "+"+c)
		}
	}
	if len(want) > 0 {
		if err := os.WriteFile(filepath.Join(self, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644); err != nil {
			return "", fmt.Errorf("cgroup v2: delegate %v in %s: %w", want, self, err)
		}
	}
	return filepath.Join(v2Path, "container-"+id), nil
}

// Exec runs args in the running container id of bundle (runc exec), as a health check does,
// and returns its exit code. With timeout > 0 the command is killed (SIGKILL, inside the
// container: runc exec's own process may not take the command with it) once it has run that
// long, and Exec returns ErrTimeout, as Docker counts a health check that hung as failed.
//
// A container that is not running yet (its image still being unpacked, a volume being
// filled) is waited for, within the timeout: Docker starts a container's health checks when
// the container starts, so a check run before that must not count as a failed one.
func Exec(ctx context.Context, runc, bundle, id string, args []string, timeout time.Duration, stdout, stderr io.Writer) (int, error) {
	if err := ensureCgroupMounts(); err != nil {
		return -1, err
	}
	if runc == "" {
		var err error
		if runc, err = exec.LookPath("runc"); err != nil {
			return -1, errors.New("runc not found in PATH: `continuum setup kubernetes` installs it (Debian's runc), or apt-get install runc")
		}
	}
	started := time.Now()
	if err := waitRunning(ctx, runc, filepath.Join(bundle, "runc"), id, timeout); err != nil {
		return -1, err
	}
	if timeout > 0 {
		timeout -= time.Since(started)
	}
	pidFile := filepath.Join(bundle, fmt.Sprintf("exec-%d.pid", os.Getpid()))
	defer os.Remove(pidFile)
	cmd := exec.CommandContext(ctx, runc, append([]string{"--root", filepath.Join(bundle, "runc"), "exec", "--pid-file", pidFile, id}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("runc exec: %w", err)
	}
	timedOut := make(chan struct{})
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() {
			close(timedOut)
			// The pid file names the command as the host sees it; runc writes it before the
			// command runs, so a command still running when this fires is found there.
			if b, err := os.ReadFile(pidFile); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
			_ = cmd.Process.Kill()
		})
		defer t.Stop()
	}
	err := cmd.Wait()
	select {
	case <-timedOut:
		return -1, fmt.Errorf("%w after %v: %s", ErrTimeout, timeout, strings.Join(args, " "))
	default:
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// waitRunning waits until runc reports container id running: not yet created, or created and
// not yet started, is waited for (until timeout if > 0, and ctx); stopped is an error.
func waitRunning(ctx context.Context, runc, root, id string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := exec.CommandContext(ctx, runc, "--root", root, "state", id).Output()
		if err == nil {
			var st struct {
				Status string `json:"status"`
			}
			if json.Unmarshal(out, &st) == nil {
				switch st.Status {
				case "running":
					return nil
				case "stopped":
					return fmt.Errorf("container %s has stopped", id)
				}
			}
		}
		select {
		case <-ctx.Done():
			if timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w after %v: container %s was not running yet", ErrTimeout, timeout, id)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ErrTimeout is Exec's error for a command that ran past its timeout.
var ErrTimeout = errors.New("the command did not finish")
