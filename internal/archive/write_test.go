package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteTreePairsHardLinksByDeviceAndInode: two files on two filesystems may have the same
// inode number; WriteTree keyed hard links on the number alone, so the second file became a
// hard link to the first (its contents lost, a link to another file written). Two fresh tmpfs
// mounts, each with a file of two links, give the same numbers.
func TestWriteTreePairsHardLinksByDeviceAndInode(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CONTINUUM_REQUIRE_ROOT") != "" {
			t.Fatal("needs root (to mount tmpfs)")
		}
		t.Skip("needs root (to mount tmpfs)")
	}
	dir := t.TempDir()
	var inos []uint64
	for _, fs := range []string{"a", "b"} {
		p := filepath.Join(dir, fs)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
		if err := os.WriteFile(filepath.Join(p, "f"), []byte(fs), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(p, "f"), filepath.Join(p, "g")); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(p, "f"), &st); err != nil {
			t.Fatal(err)
		}
		inos = append(inos, st.Ino)
	}
	if inos[0] != inos[1] {
		t.Skipf("the two tmpfs files have inodes %d and %d: nothing to confuse", inos[0], inos[1])
	}
	var buf bytes.Buffer
	if err := WriteTree(&buf, dir); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeLink {
			got[h.Name] = "link to " + h.Linkname
		} else if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			got[h.Name] = string(b)
		}
	}
	for name, want := range map[string]string{"a/f": "a", "a/g": "link to a/f", "b/f": "b", "b/g": "link to b/f"} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q (all: %v)", name, got[name], want, got)
		}
	}
}
