package cluster

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// imageRefs lists the image names an OCI layout tarball declares in its index.json (the
// annotations containerd's import reads).
func imageRefs(tarball string) ([]string, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no index.json (want an OCI image layout tarball, as `continuum image build` writes)", tarball)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tarball, err)
		}
		if strings.TrimPrefix(h.Name, "./") != "index.json" {
			continue
		}
		var idx struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return nil, fmt.Errorf("%s: index.json: %w", tarball, err)
		}
		var refs []string
		for _, m := range idx.Manifests {
			if r := m.Annotations["io.containerd.image.name"]; r != "" {
				refs = append(refs, r)
			}
		}
		return refs, nil
	}
}

// SandboxFrom picks the sandbox image among the tarballs: the continuum-pause image
// (`continuum image build` writes it beside the continuum image).
func SandboxFrom(tarballs []string) (string, error) {
	var all []string
	for _, t := range tarballs {
		refs, err := imageRefs(t)
		if err != nil {
			return "", err
		}
		for _, r := range refs {
			if strings.Contains(r, "/continuum-pause:") {
				return r, nil
			}
		}
		all = append(all, refs...)
	}
	return "", fmt.Errorf("no continuum-pause image among %v (images %v): pass the tarball `continuum image build` writes, or --sandbox-image", tarballs, all)
}
