package oci

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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
	if err := os.MkdirAll(base, 0o700); err != nil {
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
