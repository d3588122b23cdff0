package kubeplatform

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/continuum-project/continuum/internal/platform"
)

// imageRef is the image as the pod names it, and its pull policy: a registry reference as it
// is (pulled if not present), a file of this host imported into the cluster's containerd once
// per run (and never pulled).
func (pf *Platform) imageRef(ctx context.Context, img *platform.Image) (string, corev1.PullPolicy, error) {
	if !local(img.Ref) {
		return img.Ref, corev1.PullIfNotPresent, nil
	}
	if pf.containerd == "" {
		return "", "", fmt.Errorf("platform kubernetes cannot run image %s, a file of this host, without the cluster's containerd socket to import it through (--containerd)", img.Ref)
	}
	pf.imageMu.Lock()
	defer pf.imageMu.Unlock()
	key := img.Ref + "\x00" + img.Pick
	pf.mu.Lock()
	ref, ok := pf.images[key]
	pf.mu.Unlock()
	if ok {
		return ref, corev1.PullNever, nil
	}
	ref, err := importImage(ctx, pf.containerd, img.Ref, img.Pick)
	if err != nil {
		return "", "", err
	}
	pf.log.Info("image imported into the cluster", "image", img.Ref, "as", ref)
	pf.mu.Lock()
	pf.images[key] = ref
	pf.mu.Unlock()
	return ref, corev1.PullNever, nil
}

// importedRE reads the images `ctr images import` unpacked: "unpacking NAME (sha256:...)...done".
var importedRE = regexp.MustCompile(`unpacking (\S+) \((sha256:[0-9a-f]{64})\)`)

// importImage imports an OCI layout (directory or tar) or a docker save tarball into the
// k8s.io namespace of the containerd at sock, where the kubelet finds it, and tags the image
// pick names (or the only one) continuum.local/image:<digest>, the name pods then give: a
// layout's own names may be bare tags, or shared by other images.
func importImage(ctx context.Context, sock, path, pick string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", path, err)
	}
	archive := path
	if fi.IsDir() { // ctr imports archives only
		tmp, err := os.CreateTemp("", "continuum-image-*.tar")
		if err != nil {
			return "", err
		}
		defer os.Remove(tmp.Name())
		err = tarDir(tmp, path)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("image %s: %w", path, err)
		}
		archive = tmp.Name()
	}
	ctr := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "-n", "k8s.io"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
		}
		return out, nil
	}
	out, err := ctr("images", "import", "--digests", "--no-unpack=false", archive)
	if err != nil {
		return "", fmt.Errorf("image %s: importing it into the cluster: %w", path, err)
	}
	name, digest, err := pickImported(string(out), pick)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", path, err)
	}
	ref := "continuum.local/image:" + strings.TrimPrefix(digest, "sha256:")[:20]
	if _, err := ctr("images", "tag", "--force", name, ref); err != nil {
		return "", fmt.Errorf("image %s: %w", path, err)
	}
	return ref, nil
}

// pickImported chooses, among the images an import printed, the one pick names (its full name,
// its repository's last part, its tag, or both as repo:tag), or the only one.
func pickImported(out, pick string) (name, digest string, err error) {
	byName := map[string]string{}
	for _, m := range importedRE.FindAllStringSubmatch(out, -1) {
		byName[m[1]] = m[2]
	}
	digests := map[string]bool{}
	var names []string
	for n, d := range byName {
		names = append(names, n)
		digests[d] = true
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", "", fmt.Errorf("the import named no image (ctr said: %s)", strings.TrimSpace(out))
	}
	if pick == "" {
		if len(digests) == 1 {
			return names[0], byName[names[0]], nil
		}
		return "", "", fmt.Errorf("it holds several images (%s): give image_name", strings.Join(names, ", "))
	}
	for _, n := range names {
		repo, tag := n, ""
		if i := strings.LastIndex(n, ":"); i > strings.LastIndex(n, "/") {
			repo, tag = n[:i], n[i+1:]
		}
		base := repo[strings.LastIndex(repo, "/")+1:]
		if pick == n || pick == base || pick == tag || pick == base+":"+tag || strings.HasSuffix(n, "/"+pick) {
			return n, byName[n], nil
		}
	}
	return "", "", fmt.Errorf("no image named %q in it (it holds %s)", pick, strings.Join(names, ", "))
}

// tarDir writes dir's tree (an OCI layout) to w as a tar with paths relative to dir.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil // a layout holds files and directories only
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
