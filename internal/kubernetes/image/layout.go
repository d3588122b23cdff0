package image

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Named is an image with the reference it is stored under.
type Named struct {
	Ref   string
	Image v1.Image
}

// defaultRegistry is the registry container runtimes (containerd, and so kubelet) put in front of a
// reference that names none: an image imported under the short name would not be found by the
// name a pod spec gives.
const defaultRegistry = "docker.io"

// FullName is ref as container runtimes normalise it: with a registry (defaultRegistry when the
// first component is not a host), "library/" before a one-component repository, and ":latest"
// when ref has neither tag nor digest.
func FullName(ref string) string {
	name, suffix := ref, ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, suffix = name[:i], name[i:]
	} else if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, suffix = name[:i], name[i:]
	} else {
		suffix = ":latest"
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = defaultRegistry + "/" + name
	} else if rest == "" {
		name = first
	}
	return name + suffix
}

// WriteTarball writes the images as one OCI image layout (oci-layout, index.json, blobs/) in a
// tar file at dst. Each index entry carries the image's full name (io.containerd.image.name,
// what `ctr images import` names it) and its tag (org.opencontainers.image.ref.name). The tar's
// entries are sorted and dated epoch, so the same images give the same file.
func WriteTarball(dst string, images []Named, epoch time.Time) error {
	dir, err := os.MkdirTemp(filepath.Dir(dst), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, n := range images {
		full := FullName(n.Ref)
		tag := ""
		if i := strings.LastIndex(full, ":"); i > strings.LastIndex(full, "/") {
			tag = full[i+1:]
		}
		ann := map[string]string{"io.containerd.image.name": full}
		if tag != "" {
			ann["org.opencontainers.image.ref.name"] = tag
		}
		if err := p.AppendImage(n.Image, layout.WithAnnotations(ann)); err != nil {
			return fmt.Errorf("%s: %w", n.Ref, err)
		}
	}
	// The layout's files with fixed permissions (the umask does not leak into the tarball).
	t := NewTree()
	err = filepath.WalkDir(dir, func(host string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, host)
		if err != nil || rel == "." {
			return err
		}
		p := path.Clean(filepath.ToSlash(rel))
		if d.IsDir() {
			t.Dir(p, 0o755, 0, 0)
			return nil
		}
		t.entries[clean(p)] = entry{mode: 0o644, src: host}
		return nil
	})
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := t.WriteTar(f, epoch); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}
