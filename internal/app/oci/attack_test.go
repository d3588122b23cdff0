package oci

import (
	"archive/tar"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Attacks found in review: each test fails while the defect it names is present.

// TestAttackResolveUserFollowsImageLinks: the image's /etc/passwd is read by its host path
// (filepath.Join(rootfs, "etc/passwd"), os.Open following links), so an image whose /etc is a
// symbolic link to an absolute path makes the host's file be read (or, a FIFO there, hangs the
// run). Here rootfs/etc -> <host dir> holding passwd with alice:4242.
func TestAttackResolveUserFollowsImageLinks(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "passwd"), []byte("alice:x:4242:4243::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	if err := os.Symlink(host, filepath.Join(rootfs, "etc")); err != nil { // as a layer's "etc" -> "/etc"
		t.Fatal(err)
	}
	uid, gid, err := resolveUser(rootfs, "alice")
	if err == nil {
		t.Fatalf("resolveUser read the host's %s/passwd through the image's /etc link: uid %d gid %d", host, uid, gid)
	}
}

// TestAttackCopyUpPutsImageDevicesAndSetuidOnTheHost: LayerPolicy keeps a layer's devices
// and setuid bits on the ground that the layers sit in a 0700 cache and the container's
// device cgroup decides who opens a device; copy-up then copies them, by copyUpPolicy
// (Devices, SpecialBits, Owners), into the volume, a host directory named by HOST_DIR, whose
// root takes the image directory's mode. An image's /data (0777) with a 0666 block device
// (any major:minor the layer names, 8:0 a disk) and a setuid-root file so becomes a world-open raw disk and a root shell on the host,
// outside any cgroup, for every host user who can reach HOST_DIR.
func TestAttackCopyUpPutsImageDevicesAndSetuidOnTheHost(t *testing.T) {
	requireRoot(t)
	img := image(t, v1.Config{},
		layer(t, entry{name: "data/", typ: tar.TypeDir, mode: 0o777},
			entry{name: "data/disk", typ: tar.TypeBlock, mode: 0o666},
			entry{name: "data/sh", body: "#!/bin/sh\n", mode: 0o4755}))
	root := mounted(t, img)
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyUp(root, "/data", vol); err != nil {
		t.Fatal(err)
	}
	var bad []string
	if fi, err := os.Lstat(filepath.Join(vol, "disk")); err == nil && fi.Mode()&os.ModeDevice != 0 {
		bad = append(bad, "disk: "+fi.Mode().String())
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
