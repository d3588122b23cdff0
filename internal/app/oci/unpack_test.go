package oci

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive/archivetest"
)

// rawLayer is a layer of exactly these headers (regular files get body "x").
func rawLayer(t *testing.T, hdrs ...*tar.Header) v1.Layer {
	t.Helper()
	b := archivetest.Headers(t, hdrs...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestUnpackHardLinkThroughSymlinkStaysInside (issue 41, defect 10): a hard link whose target
// goes through a symlink the layer made (evil -> a host directory) neither links the host's
// file into the layer nor changes its owner or extended attributes.
func TestUnpackHardLinkThroughSymlinkStaysInside(t *testing.T) {
	requireRoot(t)
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	img := image(t, v1.Config{}, rawLayer(t,
		&tar.Header{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: host, Mode: 0o777},
		&tar.Header{Name: "stolen", Typeflag: tar.TypeLink, Linkname: "evil/secret", Uid: 4242, Gid: 4242, Mode: 0o6755,
			Format: tar.FormatPAX, PAXRecords: map[string]string{"SCHILY.xattr.trusted.pwned": "y"}},
	))
	_, err := Unpack(img, t.TempDir())
	var st unix.Stat_t
	if serr := unix.Lstat(secret, &st); serr != nil {
		t.Fatal(serr)
	}
	if st.Uid != 0 || st.Gid != 0 || st.Nlink != 1 || st.Mode&0o7777 != 0o600 {
		t.Errorf("the host file changed: uid %d gid %d links %d mode %o (unpack: %v)", st.Uid, st.Gid, st.Nlink, st.Mode&0o7777, err)
	}
	if _, xerr := unix.Lgetxattr(secret, "trusted.pwned", make([]byte, 8)); xerr == nil {
		t.Errorf("the host file got the layer's xattr (unpack: %v)", err)
	}
	if err == nil {
		t.Error("unpack: no error for a hard link through a symlink")
	}
}

// TestUnpackDirTimesNotThroughSymlink (issue 41, defect 11): a directory the layer later
// replaces by a symlink to a host directory does not get its times set through that link.
func TestUnpackDirTimesNotThroughSymlink(t *testing.T) {
	requireRoot(t)
	host := t.TempDir()
	sub := filepath.Join(host, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Lstat(sub, &before); err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1e9, 0)
	img := image(t, v1.Config{}, rawLayer(t,
		&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: old},
		&tar.Header{Name: "d/sub/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: old},
		&tar.Header{Name: "d", Typeflag: tar.TypeSymlink, Linkname: host, Mode: 0o777, ModTime: old},
	))
	if _, err := Unpack(img, t.TempDir()); err != nil {
		t.Logf("unpack: %v", err)
	}
	var after unix.Stat_t
	if err := unix.Lstat(sub, &after); err != nil {
		t.Fatal(err)
	}
	if after.Mtim != before.Mtim || after.Atim != before.Atim {
		t.Errorf("the host directory's times changed: mtime %v -> %v", time.Unix(before.Mtim.Unix()), time.Unix(after.Mtim.Unix()))
	}
}

// TestUnpackKeepsTheLayerCachePrivate: the layers keep their devices and setuid files because
// the cache is 0700; a cache directory that was already there with another mode (made by hand,
// an older version) is made 0700 too, and a link in its place is refused.
func TestUnpackKeepsTheLayerCachePrivate(t *testing.T) {
	requireRoot(t)
	img := image(t, v1.Config{}, layer(t, entry{name: "f", body: "x"}))
	cache := t.TempDir()
	if err := os.Mkdir(filepath.Join(cache, "layers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(cache, "layers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Unpack(img, cache); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(cache, "layers")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the layer cache: %v, %v; want 0700", fi.Mode(), err)
	}
	linked := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(linked, "layers")); err != nil {
		t.Fatal(err)
	}
	if _, err := Unpack(img, linked); err == nil {
		t.Error("Unpack took a symbolic link as its layer cache")
	}
}
