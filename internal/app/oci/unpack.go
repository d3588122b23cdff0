package oci

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive"
)

func goarch() string { return runtime.GOARCH }

// Unpack makes sure every layer of img is unpacked under cacheDir/layers/<diff id> and returns
// the directories, the top layer first (overlayfs' lowerdir order). A layer is unpacked into a
// temporary directory and renamed into place, so a crash leaves no half layer behind and images
// sharing a layer share its directory.
func Unpack(img v1.Image, cacheDir string) ([]string, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cacheDir, "layers")
	if err := privateDir(base); err != nil {
		return nil, err
	}
	dirs := make([]string, len(layers))
	for i, l := range layers {
		id, err := l.DiffID()
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(base, id.Algorithm+"-"+id.Hex)
		dirs[len(layers)-1-i] = dir
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		tmp, err := os.MkdirTemp(base, ".unpack-")
		if err != nil {
			return nil, err
		}
		rc, err := l.Uncompressed()
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		err = extractLayer(tmp, rc)
		rc.Close()
		if err == nil {
			err = os.Chmod(tmp, 0o755) // MkdirTemp made it 0700; the layer's root is the image's /
		}
		if err == nil {
			if err = os.Rename(tmp, dir); err != nil && dirExists(dir) {
				err = nil // unpacked meanwhile by another instance
			}
		}
		if err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("layer %s: %w", id, err)
		}
	}
	return dirs, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// extractLayer writes one layer's tar stream under root (archive.LayerPolicy: whiteouts
// converted to overlayfs', nothing outside root touched, no link followed).
func extractLayer(root string, r io.Reader) error {
	return archive.Extract(r, root, archive.LayerPolicy)
}

// privateDir makes dir, or checks the one there, a directory only its owner, this process's
// user, may enter (0700), whatever mode it had: LayerPolicy keeps a layer's devices and
// setuid files because nobody else can reach them under it.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the layer cache %s: %w (want a directory, not a link)", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("the layer cache %s is owned by uid %d, not this user (%d): it must be private to the runner", dir, st.Uid, os.Geteuid())
	}
	if st.Mode&0o7777 != 0o700 {
		return unix.Fchmod(fd, 0o700)
	}
	return nil
}
