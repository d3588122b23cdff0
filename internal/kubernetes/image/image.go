package image

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec is one image: its layers, bottom first, and its configuration.
type Spec struct {
	// Name is the image's reference, e.g. continuum-project/continuum:0.1.0 (see FullName).
	Name string
	// Layers are the file trees, bottom first; a later one's file wins.
	Layers []Layer
	// Entrypoint and Cmd as in the OCI image config.
	Entrypoint, Cmd []string
	// User is "uid:gid" (numeric: no name lookup happens before the process runs).
	User string
	// Env holds KEY=value pairs; PATH is set by the image when not given.
	Env        []string
	WorkingDir string
	// Labels go into the image config (org.opencontainers.image.* by convention).
	Labels map[string]string
}

// Layer is one layer's tree and the line its history entry carries.
type Layer struct {
	Tree    *Tree
	Comment string
}

// Build makes the image: each layer written, compressed and hashed once (into tmp, a
// directory removed by the caller once the image is written), with epoch as every file's time
// and the image's creation time.
func Build(s Spec, epoch time.Time, tmp string) (v1.Image, error) {
	return build(s, epoch, tmp, layerCache{}, nil)
}

// layerCache holds the layers written so far by their tree, so that images sharing a tree (the
// continuum and pause images) write and compress it once.
type layerCache map[*Tree]v1.Layer

// build is Build with the layers already made in this run (cache) and, if store is not nil,
// the layers kept across builds (layercache.go).
func build(s Spec, epoch time.Time, tmp string, cache layerCache, store *layerStore) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range s.Layers {
		layer, ok := cache[l.Tree]
		if !ok {
			var err error
			if store != nil {
				layer, err = store.layer(l.Tree, epoch, tmp)
			} else {
				layer, err = compressedLayer(l.Tree, epoch, tmp)
			}
			if err != nil {
				return nil, fmt.Errorf("image %s: layer %q: %w", s.Name, l.Comment, err)
			}
			cache[l.Tree] = layer
		}
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: l.Comment, Comment: l.Comment}})
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: epoch}
	env := s.Env
	if !hasKey(env, "PATH") {
		env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	}
	cf.Config = v1.Config{Entrypoint: s.Entrypoint, Cmd: s.Cmd, User: s.User, Env: env,
		WorkingDir: s.WorkingDir, Labels: s.Labels}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	return img, nil
}

// compressedLayer writes the tree's compressed layer into tmp.
func compressedLayer(t *Tree, epoch time.Time, tmp string) (v1.Layer, error) {
	path, err := t.writeGzip(tmp, epoch)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(path) }, tarball.WithMediaType(types.OCILayer))
}

func hasKey(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}
