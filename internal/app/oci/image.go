// Package oci runs an OCI container image without a container daemon: it loads the image (an OCI
// layout directory or tar, a `docker save` tarball, or a registry reference), unpacks its layers
// once each into a cache keyed by their digest, stacks them with overlayfs under a writable layer
// of the container's own, writes an OCI runtime bundle whose process is the image's entrypoint,
// env, working directory and user, and runs it with runc in the caller's network namespace (a
// testbed node's) and below the caller's cgroup (so the node's and the instance's limits and
// accounting hold for it).
package oci

import (
	"archive/tar"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/continuum-project/continuum/internal/archive"
)

// refNameAnnotations name an image inside an OCI layout: containerd's full name, then the tag.
var refNameAnnotations = []string{"io.containerd.image.name", "org.opencontainers.image.ref.name"}

// Load finds the image src names:
//   - a directory holding an OCI image layout (index.json);
//   - a tar file of an OCI image layout (`continuum image build` writes these), unpacked once
//     into cacheDir/layouts/<size-mtime-name>;
//   - a `docker save` tarball (manifest.json);
//   - otherwise a registry reference (registry/repository:tag or @digest); a registry on
//     localhost or 127.0.0.1 is spoken to over plain HTTP, as Docker does.
//
// pick chooses an image of a layout holding several, by its full name or tag; "" takes the only
// one.
func Load(src, pick, cacheDir string) (v1.Image, error) {
	st, err := os.Stat(src)
	switch {
	case err == nil && st.IsDir():
		return fromLayout(src, pick)
	case err == nil:
		if hasEntry(src, "index.json") {
			dir, err := unpackLayoutTar(src, st, cacheDir)
			if err != nil {
				return nil, err
			}
			return fromLayout(dir, pick)
		}
		img, err := tarball.ImageFromPath(src, nil)
		if err != nil {
			return nil, fmt.Errorf("image %s: neither an OCI layout tar nor a docker save tarball: %w", src, err)
		}
		return img, nil
	case strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/"):
		return nil, fmt.Errorf("image %s: %w", src, err)
	}
	opts := []name.Option{}
	if host, _, _ := strings.Cut(src, "/"); strings.HasPrefix(host, "localhost") || strings.HasPrefix(host, "127.0.0.1") {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("image %q: not a file, a directory or a registry reference: %w", src, err)
	}
	img, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: goarch()}))
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	return img, nil
}

func fromLayout(dir, pick string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var names []string
	var match []v1.Descriptor
	for _, d := range im.Manifests {
		var n string
		for _, a := range refNameAnnotations {
			if d.Annotations[a] != "" {
				n = d.Annotations[a]
				break
			}
		}
		names = append(names, n)
		if pick == "" || d.Annotations["org.opencontainers.image.ref.name"] == pick || namesImage(n, pick) {
			match = append(match, d)
		}
	}
	sort.Strings(names)
	switch {
	case len(match) == 0 && pick != "":
		return nil, fmt.Errorf("image layout %s has no image %q; it has %s", dir, pick, strings.Join(names, ", "))
	case len(match) == 0:
		return nil, fmt.Errorf("image layout %s holds no image", dir)
	case len(match) > 1:
		return nil, fmt.Errorf("image layout %s holds %d images (%s): name the one to run", dir, len(match), strings.Join(names, ", "))
	}
	return idx.Image(match[0].Digest)
}

// namesImage reports whether pick names the image called full ("registry/repo/name:tag"): the
// full name, or its trailing path components with or without the tag ("name", "repo/name:tag").
func namesImage(full, pick string) bool {
	if full == "" {
		return false
	}
	repo := full
	if i := strings.LastIndex(full, ":"); i > strings.LastIndex(full, "/") {
		repo = full[:i]
	}
	for _, n := range []string{full, repo} {
		if n == pick || strings.HasSuffix(n, "/"+pick) {
			return true
		}
	}
	return false
}

// hasEntry reports whether the tar file at path has a top-level entry named n.
func hasEntry(path, n string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		if filepath.Clean(strings.TrimPrefix(h.Name, "./")) == n {
			return true
		}
	}
}

// unpackLayoutTar extracts an OCI layout tar into the cache, once per file version (its name,
// size and modification time), and returns the directory.
func unpackLayoutTar(src string, st os.FileInfo, cacheDir string) (string, error) {
	abs, _ := filepath.Abs(src)
	prefix := fmt.Sprintf("%x-", hashString(abs))
	key := fmt.Sprintf("%s%d-%d", prefix, st.Size(), st.ModTime().UnixNano())
	dir := filepath.Join(cacheDir, "layouts", key)
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return dir, nil
	}
	// Earlier versions of the same file (rebuilt images) are not needed again: one copy per
	// path stays in the cache.
	if old, _ := filepath.Glob(filepath.Join(cacheDir, "layouts", prefix+"*")); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Join(cacheDir), ".layout-")
	if err != nil {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return "", err
		}
		if tmp, err = os.MkdirTemp(cacheDir, ".layout-"); err != nil {
			return "", err
		}
	}
	defer os.RemoveAll(tmp)
	f, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// A layout holds directories and regular files only (index.json, oci-layout, blobs/).
	if err := archive.Extract(f, tmp, archive.Policy{KeepRoot: true}); err != nil {
		return "", fmt.Errorf("image %s: an OCI layout tar: %w", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(filepath.Join(dir, "index.json")); serr != nil { // not another process's
			return "", err
		}
	}
	return dir, nil
}

func hashString(s string) uint64 {
	var h uint64 = 14695981039346656037 // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
