package oci

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// mounted stacks img's layers with overlayfs and returns the mount point.
func mounted(t *testing.T, img v1.Image) string {
	t.Helper()
	dirs, err := Unpack(img, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, upper, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := unix.Mount("overlay", root, "overlay", 0, "lowerdir="+strings.Join(dirs, ":")+",upperdir="+upper+",workdir="+work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	return root
}

// TestCopyUpFillsNewVolumes: an empty volume over a path the image has content at gets that
// content, with owners, modes (sticky, not setuid), times, symlinks, hard links and FIFOs kept,
// and the volume's root keeps its own owner and mode (a host directory, as a bind mount) unless
// the volume is fresh (then the image directory's, less write for group and other); the path is
// resolved inside the image (an absolute symlink there does not lead to the host's); a volume
// with something in it, or a path the image lacks, is left alone.
func TestCopyUpFillsNewVolumes(t *testing.T) {
	requireRoot(t)
	img := image(t, v1.Config{},
		layer(t, entry{name: "data/", typ: tar.TypeDir, mode: 0o750, uid: 1000, gid: 1001},
			entry{name: "data/conf", body: "c", mode: 0o640, uid: 1000, gid: 1001},
			entry{name: "data/hard", typ: tar.TypeLink, link: "data/conf", uid: 1000, gid: 1001},
			entry{name: "data/ln", typ: tar.TypeSymlink, link: "conf", uid: 1000, gid: 1001},
			entry{name: "data/bin/", typ: tar.TypeDir},
			entry{name: "data/bin/tool", body: "#!/bin/sh\n", mode: 0o4755},
			entry{name: "data/tmp/", typ: tar.TypeDir, mode: 0o1777},
			entry{name: "data/pipe", typ: tar.TypeFifo, mode: 0o600, uid: 1000},
			entry{name: "srv", typ: tar.TypeSymlink, link: "/data"},
			entry{name: "up", typ: tar.TypeSymlink, link: "../../../../data/bin"}))
	root := mounted(t, img)

	check := func(vol string) {
		t.Helper()
		st := func(p string) *syscall.Stat_t {
			t.Helper()
			fi, err := os.Lstat(filepath.Join(vol, p))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			return fi.Sys().(*syscall.Stat_t)
		}
		for p, want := range map[string]struct {
			mode     uint32
			uid, gid uint32
		}{
			".":        {syscall.S_IFDIR | 0o710, 0, 0}, // the volume's own
			"conf":     {syscall.S_IFREG | 0o640, 1000, 1001},
			"bin/tool": {syscall.S_IFREG | 0o755, 0, 0},
			"tmp":      {syscall.S_IFDIR | 0o1777, 0, 0},
			"pipe":     {syscall.S_IFIFO | 0o600, 1000, 0},
			"ln":       {syscall.S_IFLNK | 0o777, 1000, 1001},
		} {
			if s := st(p); s.Mode != want.mode || s.Uid != want.uid || s.Gid != want.gid {
				t.Errorf("%s: mode %o owner %d:%d, want %o %d:%d", p, s.Mode, s.Uid, s.Gid, want.mode, want.uid, want.gid)
			}
		}
		if b, err := os.ReadFile(filepath.Join(vol, "conf")); err != nil || string(b) != "c" {
			t.Errorf("conf %q %v", b, err)
		}
		if l, _ := os.Readlink(filepath.Join(vol, "ln")); l != "conf" {
			t.Errorf("ln -> %q", l)
		}
		if st("hard").Ino != st("conf").Ino {
			t.Error("hard is not a hard link of conf any more")
		}
		if m := st("conf").Mtim; time.Unix(m.Sec, m.Nsec) != time.Unix(1e9, 0) {
			t.Errorf("conf's mtime %v, want the image's", time.Unix(m.Sec, m.Nsec))
		}
	}
	newVolume := func() string {
		vol := t.TempDir()
		if err := os.Chmod(vol, 0o710); err != nil {
			t.Fatal(err)
		}
		return vol
	}
	vol := newVolume()
	if err := copyUp(root, "/data", vol, false); err != nil {
		t.Fatal(err)
	}
	check(vol)
	// Through the image's absolute symlink /srv -> /data: the image's /data, not the host's.
	vol = newVolume()
	if err := copyUp(root, "/srv/", vol, false); err != nil {
		t.Fatal(err)
	}
	check(vol)
	// Fresh (made for this container): its root takes the image directory's owner and mode,
	// less write for group and other (the image's 1777 /data/tmp gives 1755).
	for dest, want := range map[string]uint32{"/data": syscall.S_IFDIR | 0o750, "/data/tmp": syscall.S_IFDIR | 0o1755} {
		vol = newVolume()
		if err := copyUp(root, dest, vol, true); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(vol)
		if err != nil {
			t.Fatal(err)
		}
		uid := map[string]uint32{"/data": 1000, "/data/tmp": 0}[dest]
		if s := fi.Sys().(*syscall.Stat_t); s.Mode != want || s.Uid != uid {
			t.Errorf("fresh volume over %s: mode %o owner %d, want %o %d", dest, s.Mode, s.Uid, want, uid)
		}
	}
	// A relative symlink climbing past the root stays in it.
	if fd, err := resolveIn(root, "/up"); err != nil {
		t.Errorf("resolveIn(/up): %v", err)
	} else {
		p, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		unix.Close(fd)
		if p != filepath.Join(root, "data/bin") {
			t.Errorf("resolveIn(/up) = %q, want %s", p, filepath.Join(root, "data/bin"))
		}
	}
	// Not new: untouched, its root's owner too.
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "mine"), []byte("m"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyUp(root, "/data", used, false); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(used); len(ents) != 1 {
		t.Errorf("a volume with content got the image's too: %v", ents)
	}
	if fi, _ := os.Stat(used); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("a volume with content changed owner")
	}
	// A path the image lacks, or a file: nothing to copy.
	for _, p := range []string{"/missing", "/data/conf"} {
		empty := t.TempDir()
		if err := copyUp(root, p, empty, false); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if ents, _ := os.ReadDir(empty); len(ents) != 0 {
			t.Errorf("%s: copied %v", p, ents)
		}
	}
}

// TestCopyUpTakesBackslashNames: an image may hold "data/a\b" (a plain Linux name); copy-up
// streams the image's tree through WriteTree into Extract, which once refused any name with a
// backslash, so such an image made every container run with a :copy volume over /data fail.
func TestCopyUpTakesBackslashNames(t *testing.T) {
	requireRoot(t)
	img := image(t, v1.Config{},
		layer(t, entry{name: "data/", typ: tar.TypeDir},
			entry{name: `data/a\b`, body: "x"}))
	root := mounted(t, img)
	vol := t.TempDir()
	if err := copyUp(root, "/data", vol, false); err != nil {
		t.Fatalf("copyUp of an image directory holding a file named %q: %v", `a\b`, err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, `a\b`)); err != nil || string(b) != "x" {
		t.Fatalf("a\\b in the volume: %q, %v", b, err)
	}
}

// TestCopyUpLeavesNoDevicesOrSetuidOnTheHost: LayerPolicy keeps a layer's devices and setuid
// bits on the ground that the layers sit in a 0700 cache and the container's device cgroup
// decides who opens a device; copy-up once copied them into the volume, a host directory
// named by HOST_DIR, whose root took the image directory's mode. An image's /data (0777) with
// a 0666 block device (any major:minor the layer names, 8:0 a disk), a hard link to it, a
// setuid-root file and a file capability so became a world-open raw disk and root shells on
// the host, outside any cgroup, for every host user who can reach HOST_DIR.
func TestCopyUpLeavesNoDevicesOrSetuidOnTheHost(t *testing.T) {
	requireRoot(t)
	img := image(t, v1.Config{},
		layer(t, entry{name: "data/", typ: tar.TypeDir, mode: 0o777},
			entry{name: "data/disk", typ: tar.TypeBlock, mode: 0o666},
			entry{name: "data/disk2", typ: tar.TypeLink, link: "data/disk"},
			entry{name: "data/sh", body: "#!/bin/sh\n", mode: 0o4755},
			entry{name: "data/cap", body: "#!/bin/sh\n", mode: 0o755, xattrs: map[string]string{"security.capability": string(fileCap)}}))
	root := mounted(t, img)
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyUp(root, "/data", vol, false); err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, n := range []string{"disk", "disk2"} {
		if fi, err := os.Lstat(filepath.Join(vol, n)); err == nil {
			bad = append(bad, n+": "+fi.Mode().String())
		}
	}
	if _, err := unix.Lgetxattr(filepath.Join(vol, "cap"), "security.capability", make([]byte, 64)); err == nil {
		bad = append(bad, "cap: security.capability")
	}
	if _, err := unix.Lgetxattr(filepath.Join(root, "data/cap"), "security.capability", make([]byte, 64)); err != nil {
		t.Errorf("the image's data/cap has no capability (%v): the test tests nothing", err)
	}
	if fi, err := os.Lstat(filepath.Join(vol, "sh")); err == nil && fi.Mode()&os.ModeSetuid != 0 {
		bad = append(bad, "sh: "+fi.Mode().String())
	}
	if fi, err := os.Lstat(vol); err == nil && fi.Mode().Perm()&0o007 != 0 {
		bad = append(bad, "the volume root: "+fi.Mode().String())
	}
	if len(bad) > 0 {
		t.Fatalf("the image put on the host volume %s: %v", vol, bad)
	}
}

// fileCap is a security.capability value (VFS_CAP_REVISION_2, effective): CAP_NET_RAW.
var fileCap = []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
