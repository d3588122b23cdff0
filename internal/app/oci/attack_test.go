package oci

import (
	"os"
	"path/filepath"
	"testing"
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
