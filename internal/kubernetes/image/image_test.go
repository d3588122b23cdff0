package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/continuum-project/continuum/internal/testenv"
)

// fakeBinaries stands in for the static binaries: the images' structure, not the programs, is
// under test here (TestPythonRuntimeRuns runs a real interpreter from a built tree).
func fakeBinaries(t *testing.T) (continuum, proxy string) {
	dir := t.TempDir()
	continuum, proxy = filepath.Join(dir, "continuum"), filepath.Join(dir, "continuum-proxy")
	for _, p := range []string{continuum, proxy} {
		if err := os.WriteFile(p, []byte("#!/bin/false\n"+filepath.Base(p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return continuum, proxy
}

func buildBinaryImages(t *testing.T, out string) []Result {
	t.Helper()
	c, p := fakeBinaries(t)
	cfg := DefaultConfig()
	cfg.Out, cfg.Images, cfg.ContinuumBinary, cfg.ProxyBinary = out, []string{"continuum", "proxy"}, c, p
	cfg.Tag, cfg.Epoch = "test", time.Unix(1700000000, 0).UTC()
	cfg.LayerStore = "" // the store is tested by layercache_test.go; not the user's here
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readLayout unpacks an OCI layout tarball and returns its images by their
// io.containerd.image.name annotation.
func readLayout(t *testing.T, tarball string) map[string]v1.Image {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xf", tarball, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xf %s: %v\n%s", tarball, err, out)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		imgs[d.Annotations["io.containerd.image.name"]] = img
	}
	return imgs
}

func TestBuildsAreReproducible(t *testing.T) {
	a := buildBinaryImages(t, t.TempDir())
	b := buildBinaryImages(t, t.TempDir())
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("want 2 tarballs each, got %d and %d", len(a), len(b))
	}
	for i := range a {
		if !slices.Equal(a[i].Images, b[i].Images) {
			t.Errorf("%s: digests differ between two builds:\n%v\n%v", filepath.Base(a[i].Tarball), a[i].Images, b[i].Images)
		}
		x, err := os.ReadFile(a[i].Tarball)
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(b[i].Tarball)
		if err != nil {
			t.Fatal(err)
		}
		if string(x) != string(y) {
			t.Errorf("%s: the tarballs of two builds differ", filepath.Base(a[i].Tarball))
		}
	}
}

func TestImageConfigAndNames(t *testing.T) {
	res := buildBinaryImages(t, t.TempDir())
	want := map[string][]string{
		"docker.io/continuum-project/continuum:test":       {ContinuumPath},
		"docker.io/continuum-project/continuum-pause:test": {ContinuumPath, "cluster", "pause"},
		"docker.io/continuum-project/continuum-proxy:test": {ProxyPath},
	}
	got := map[string]v1.Image{}
	for _, r := range res {
		for ref, img := range readLayout(t, r.Tarball) {
			got[ref] = img
		}
	}
	for ref, entry := range want {
		img, ok := got[ref]
		if !ok {
			t.Errorf("no image %s in the tarballs (have %v)", ref, got)
			continue
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cf.Config.Entrypoint, entry) {
			t.Errorf("%s: entrypoint %q, want %q", ref, cf.Config.Entrypoint, entry)
		}
		if cf.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532 (non-root)", ref, cf.Config.User)
		}
		if cf.OS != "linux" || cf.Created.Unix() != 1700000000 {
			t.Errorf("%s: os %q created %v, want linux at the epoch given", ref, cf.OS, cf.Created)
		}
		mt, err := img.MediaType()
		if err != nil || mt != "application/vnd.oci.image.manifest.v1+json" {
			t.Errorf("%s: manifest media type %q (%v), want OCI's", ref, mt, err)
		}
	}
}

func TestLayerEntries(t *testing.T) {
	tr := baseTree()
	tr.Symlink("lib", "usr/lib")
	tr.Bytes("usr/lib/x/a", 0o644, []byte("a"))
	w := &tarLister{}
	if err := tr.WriteTar(w, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	names := w.names(t)
	if !slices.IsSortedFunc(names, func(a, b string) int {
		if lessPath(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/")) {
			return -1
		}
		return 1
	}) {
		t.Errorf("entries not sorted parents first: %v", names)
	}
	for _, n := range []string{"etc/passwd", "home/continuum/", "tmp/", "usr/", "usr/lib/", "usr/lib/x/a"} {
		if !slices.Contains(names, n) {
			t.Errorf("no %s among %v", n, names)
		}
	}
}

func TestFullName(t *testing.T) {
	for in, want := range map[string]string{
		"continuum-project/continuum:1":     "docker.io/continuum-project/continuum:1",
		"busybox":                           "docker.io/library/busybox:latest",
		"registry.lan:5000/c/continuum:dev": "registry.lan:5000/c/continuum:dev",
		"localhost/c:1":                     "localhost/c:1",
		"c/x@sha256:ab":                     "docker.io/c/x@sha256:ab",
	} {
		if got := FullName(in); got != want {
			t.Errorf("FullName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Images = []string{"pyhton"} }, `unknown image "pyhton" (want continuum, proxy, python, fl)`},
		{func(c *Config) { c.Tag = "a:b" }, `tag "a:b"`},
		{func(c *Config) { c.Out = "" }, "out:"},
		{func(c *Config) { c.Repository = "Upper/Case" }, `repository "Upper/Case" with tag`},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestPythonRuntimeRuns assembles this host's Python into a tree, unpacks it and runs the
// interpreter chrooted into it as the image's user: every library it loads must be there.
func TestPythonRuntimeRuns(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
			t.Fatal("no /usr/bin/python3: make setup installs it")
		}
		t.Skip("no /usr/bin/python3")
	}
	tr := baseTree()
	tr.KeepTimes = true
	h := newHostFiles(tr)
	if _, err := pythonRuntime(h); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	untar := exec.Command("tar", "-x", "-C", root)
	untar.Stdin = pr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	werr := tr.WriteTar(pw, time.Unix(0, 0))
	pw.Close()
	if err := untar.Wait(); err != nil || werr != nil {
		t.Fatalf("unpack: %v, %v", werr, err)
	}
	script := "import ssl, sqlite3, json, ctypes, decimal, zlib, lzma, bz2, hashlib; print('ok')"
	out, err := exec.Command("chroot", "--userspec=65532:65532", root, "/usr/bin/python3", "-I", "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("python3 in the assembled tree: %v\n%s\nlibraries this host lacks: %v", err, out, h.Missing())
	}
}

// tarLister collects a tar stream to list its entry names.
type tarLister struct{ b []byte }

func (l *tarLister) Write(p []byte) (int, error) { l.b = append(l.b, p...); return len(p), nil }

func (l *tarLister) names(t *testing.T) []string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(l.b))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uname != "" {
			t.Errorf("%s: time %v owner %q, want the epoch and numeric owners only", h.Name, h.ModTime, h.Uname)
		}
		names = append(names, h.Name)
	}
}

// FuzzFullName: normalising is idempotent and always yields a registry host and a tag or digest.
func FuzzFullName(f *testing.F) {
	for _, s := range []string{"busybox", "continuum-project/continuum:1", "registry.lan:5000/c/x@sha256:ab", "localhost/c", "a/b/c:d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		if _, err := name.ParseReference(ref); err != nil {
			return // Validate rejects it before any name is made
		}
		full := FullName(ref)
		if again := FullName(full); again != full {
			t.Errorf("FullName(%q) = %q, but FullName of that = %q", ref, full, again)
		}
		host, _, ok := strings.Cut(full, "/")
		if !ok || (!strings.ContainsAny(host, ".:") && host != "localhost") {
			t.Errorf("FullName(%q) = %q: no registry host first", ref, full)
		}
	})
}

// A dynamically linked binary would not start in the images (no C library): it is refused,
// naming the fix, before anything is built.
func TestDynamicBinaryRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Out, cfg.Images, cfg.ContinuumBinary = t.TempDir(), []string{"continuum"}, "/bin/true" // Debian's is dynamic
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("Run with /bin/true: %v, want a refusal naming CGO_ENABLED=0", err)
	}
}

// A venv made with --system-site-packages (the FL venv, whose PyTorch is Debian's python3-torch)
// imports the host's dist-packages after its own: its image carries them at the same path. One
// made without does not.
func TestVenvWithSystemSitePackages(t *testing.T) {
	var probe string // a file of the host's dist-packages
	_ = filepath.WalkDir(systemSitePackages, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			probe = p
			return filepath.SkipAll
		}
		return nil
	})
	if probe == "" {
		t.Skip("no file in " + systemSitePackages)
	}
	for _, system := range []bool{false, true} {
		venv := t.TempDir()
		if err := os.MkdirAll(filepath.Join(venv, "lib", "python3.11", "site-packages"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf("home = /usr/bin\ninclude-system-site-packages = %t\nversion = 3.11.2\n", system)
		if err := os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		tr := NewTree()
		if err := venvTree(newHostFiles(tr), PythonRoot+"/venv-fl", venv, "3.11"); err != nil {
			t.Fatal(err)
		}
		if !tr.Has(PythonRoot + "/venv-fl/pyvenv.cfg") {
			t.Fatalf("system site packages %t: the venv itself is not in the tree", system)
		}
		if got := tr.Has(probe); got != system {
			t.Errorf("system site packages %t: the tree has %s: %t, want %t", system, probe, got, system)
		}
	}
}

// A library reached through a link into another directory (Debian's alternatives:
// libblas.so.3 -> openblas-serial/libblas.so.3) finds its own needs through $ORIGIN of the
// link's directory at run time, then the system directories: what it needs comes at the path
// the loader will look, not only beside the link's target.
func TestLibraryThroughAlternativesLink(t *testing.T) {
	const blas, openblas = "/usr/lib/x86_64-linux-gnu/libblas.so.3", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"
	real, err := filepath.EvalSymlinks(blas)
	if err != nil || !strings.Contains(real, "openblas") {
		t.Skip("libblas.so.3 is not OpenBLAS here (libopenblas0-serial, which the FL stack installs)")
	}
	tr := NewTree()
	if err := newHostFiles(tr).Add(blas); err != nil {
		t.Fatal(err)
	}
	if !tr.Has(real) {
		t.Fatalf("the tree lacks %s, the link's target", real)
	}
	if !tr.Has(openblas) {
		t.Errorf("the tree lacks %s: libblas.so.3 would not load (its $ORIGIN is %s)", openblas, filepath.Dir(blas))
	}
}
