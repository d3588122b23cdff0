package cluster

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FindBinDir returns $CONTINUUM_KUBE_BIN, or the .tools/bin holding kube-apiserver in the
// working directory or a parent, or next to the running executable's clone (bin/..).
func FindBinDir() (string, error) {
	if d := os.Getenv("CONTINUUM_KUBE_BIN"); d != "" {
		return d, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for ; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, ".tools", "bin", "kube-apiserver")); err == nil {
				return filepath.Join(d, ".tools", "bin"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("no .tools/bin/kube-apiserver above the working directory or the executable: run `make setup` in the clone, or set CONTINUUM_KUBE_BIN")
}

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
