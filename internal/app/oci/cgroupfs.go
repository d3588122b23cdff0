package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ensureCgroupMounts mounts the cgroup hierarchies at /sys/fs/cgroup when this mount namespace
// has none: `ip netns exec`, which starts a testbed node's processes, remounts /sys for the
// node's network namespace and so hides them, and runc finds cgroups through the mount table.
// The namespace is the node process's own (ip netns exec unshares one), so the mounts leave the
// host's alone. The hierarchies mounted are those /proc/self/cgroup lists, each with its own
// controllers, as the host mounts them.
func ensureCgroupMounts() error {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if _, after, ok := strings.Cut(line, " - "); ok {
			if fs := strings.Fields(after); len(fs) > 0 && (fs[0] == "cgroup" || fs[0] == "cgroup2") {
				return nil
			}
		}
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 1 && strings.HasPrefix(lines[0], "0::") { // cgroup v2 only
		return mount("cgroup2", "/sys/fs/cgroup", "cgroup2", "")
	}
	if err := mount("tmpfs", "/sys/fs/cgroup", "tmpfs", "mode=755"); err != nil {
		return err
	}
	for _, line := range lines {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls := parts[1]
		if ctrls == "" { // the hybrid layout's unified hierarchy
			if err := mount("cgroup2", "/sys/fs/cgroup/unified", "cgroup2", ""); err != nil {
				return err
			}
			continue
		}
		dir := strings.TrimPrefix(ctrls, "name=")
		opts := ctrls
		if strings.HasPrefix(ctrls, "name=") {
			opts = "none," + ctrls
		}
		if err := mount("cgroup", filepath.Join("/sys/fs/cgroup", dir), "cgroup", opts); err != nil {
			return err
		}
	}
	return nil
}

func mount(src, target, fstype, data string) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(src, target, fstype, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, data); err != nil {
		return fmt.Errorf("mount %s at %s (for runc): %w", fstype, target, err)
	}
	return nil
}
