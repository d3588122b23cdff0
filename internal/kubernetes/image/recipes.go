package image

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The images' fixed facts, shared with the chart (deploy/helm/continuum) and the Dockerfiles
// (deploy/docker): the paths the chart's arguments name and the user its securityContext sets.
const (
	// UID and GID of the unprivileged user every image runs as ("continuum").
	UID = 65532
	GID = 65532
	// ContinuumPath and ProxyPath are the binaries' paths.
	ContinuumPath = "/usr/local/bin/continuum"
	ProxyPath     = "/usr/local/bin/continuum-proxy"
	// PythonRoot holds the Python side: python/src, python/functions, the venvs.
	PythonRoot = "/opt/continuum"
	homeDir    = "/home/continuum"
)

// Images are the images Run knows, by the name --images takes: the tarball's base name and
// the repository each image is stored under.
var Images = []struct{ Name, Repos, About string }{
	{"continuum", "continuum, continuum-pause", "the static continuum binary (kv, realtime-db, stream-*), and the same layers as the pods' sandbox image (`continuum cluster pause`)"},
	{"proxy", "continuum-proxy", "the slim per-node proxy binary"},
	{"python", "continuum-python", "continuum + this host's Python 3 + .tools/venv + python/src and python/functions: the function gateway"},
	{"fl", "continuum-fl", "continuum + Python 3 + .tools/venv-fl (Debian's PyTorch, Flower; about 1.7 GB): the FL orchestrator; only on request"},
}

// baseTree is the bottom layer of every image: the unprivileged user, /tmp, its home, and the
// host's CA bundle (for components that call TLS endpoints; Kubernetes' own CA comes with the
// service account token instead).
func baseTree() *Tree {
	t := NewTree()
	t.Bytes("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\ncontinuum:x:%d:%d:continuum:%s:/sbin/nologin\n", UID, GID, homeDir)))
	t.Bytes("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\ncontinuum:x:%d:\n", GID)))
	t.Bytes("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))
	t.Dir("tmp", 0o777|fs.ModeSticky, 0, 0)
	t.Dir(homeDir, 0o755, UID, GID)
	t.Dir("root", 0o700, 0, 0)
	const ca = "/etc/ssl/certs/ca-certificates.crt"
	if fi, err := os.Stat(ca); err == nil && fi.Mode().IsRegular() {
		_ = t.File(ca, ca)
	}
	return t
}

// binaryTree is a layer holding one file, executable, at dst.
func binaryTree(dst, src string) (*Tree, error) {
	t := NewTree()
	if err := t.File(dst, src); err != nil {
		return nil, fmt.Errorf("binary %s: %w", src, err)
	}
	t.entries[clean(dst)] = entry{mode: 0o755, src: src}
	return t, nil
}

// pythonRuntime is this host's Python 3 (the interpreter, its standard library and every
// shared library they load), at the host's own paths. The venvs make setup builds were made
// with this interpreter, so their compiled packages fit it.
func pythonRuntime(h *hostFiles) (version string, err error) {
	py, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		return "", fmt.Errorf("python runtime: /usr/bin/python3: %w (install Debian's python3)", err)
	}
	version = strings.TrimPrefix(filepath.Base(py), "python") // e.g. 3.11
	if err := h.Add("/usr/bin/python3"); err != nil {
		return "", fmt.Errorf("python runtime: %w", err)
	}
	stdlib := "/usr/lib/python" + version
	// Left out: the test suite, IDLE and Tk (GUI), which a function never runs.
	skip := func(rel string, d fs.DirEntry) bool {
		switch rel {
		case "test", "idlelib", "tkinter", "turtledemo", "lib2to3/tests":
			return true
		}
		return strings.HasPrefix(d.Name(), "_tkinter")
	}
	if err := h.t.HostTree(stdlib, stdlib, skip); err != nil {
		return "", fmt.Errorf("python runtime: %w", err)
	}
	if err := h.Map(stdlib); err != nil {
		return "", err
	}
	// Debian links sitecustomize.py to /etc/python3.X; bring the target.
	if _, err := os.Stat("/etc/python" + version); err == nil {
		if err := h.t.HostTree("/etc/python"+version, "/etc/python"+version, nil); err != nil {
			return "", err
		}
	}
	return version, h.ScanTree(stdlib)
}

// venvTree adds the venv at host dir venv under dst and checks that it was made for the runtime's
// Python version.
func venvTree(h *hostFiles, dst, venv, version string) error {
	real, err := filepath.EvalSymlinks(venv)
	if err != nil {
		return fmt.Errorf("venv %s: %w (run `continuum setup functions fl`)", venv, err)
	}
	if _, err := os.Stat(filepath.Join(real, "lib", "python"+version)); err != nil {
		return fmt.Errorf("venv %s: no lib/python%s: it was made with another Python than this host's python3 (%s); rebuild it with `continuum setup functions fl`", venv, version, version)
	}
	if err := h.t.HostTree(dst, real, nil); err != nil {
		return err
	}
	if err := h.Map(real); err != nil {
		return err
	}
	if err := h.ScanTree(real); err != nil {
		return err
	}
	if !venvFlag(real, "include-system-site-packages") {
		return nil
	}
	// The venv also imports the host's Debian packages (the FL venv: its PyTorch is Debian's
	// python3-torch, python/requirements-fl.txt): the image carries them at the same path, with
	// the libraries they load, so the venv imports in the image what it imports on the host.
	if _, err := os.Stat(systemSitePackages); err != nil {
		return fmt.Errorf("venv %s uses the system site packages: %w", venv, err)
	}
	if err := h.t.HostTree(systemSitePackages, systemSitePackages, nil); err != nil {
		return err
	}
	if err := h.Map(systemSitePackages); err != nil {
		return err
	}
	if err := h.ScanTree(systemSitePackages); err != nil {
		return err
	}
	// Links out of the tree come with their targets: Debian's torch/lib holds links to
	// /usr/lib/x86_64-linux-gnu/libtorch*.so.1.13, which torch loads by path (no ELF names them).
	return filepath.WalkDir(systemSitePackages, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return nil // dangling, or a directory
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if h.isMapped(filepath.Clean(target)) {
			return nil
		}
		return h.Add(target)
	})
}

// systemSitePackages is where Debian's python3-* packages are, which a venv made with
// --system-site-packages imports after its own.
const systemSitePackages = "/usr/lib/python3/dist-packages"

// sourcesTree holds the clone's python/src and python/functions under PythonRoot/python, dated
// the epoch (a clone's file times are those of its checkout) and without bytecode caches (which
// would not match those times).
func sourcesTree(root string) (*Tree, error) {
	t := NewTree()
	skip := func(rel string, d fs.DirEntry) bool {
		return d.Name() == "__pycache__" || strings.HasSuffix(d.Name(), ".egg-info")
	}
	for _, sub := range []string{"src", "functions"} {
		if err := t.HostTree(filepath.Join(PythonRoot, "python", sub), filepath.Join(root, "python", sub), skip); err != nil {
			return nil, fmt.Errorf("python sources: %w", err)
		}
	}
	return t, nil
}

// readVenvVersion is the "version" line of a venv's pyvenv.cfg ("" when absent).
func readVenvVersion(venv string) string { return venvConfig(venv, "version") }

// venvFlag reports whether the venv's pyvenv.cfg sets key to true.
func venvFlag(venv, key string) bool { return strings.EqualFold(venvConfig(venv, key), "true") }

// venvConfig is the value of key in a venv's pyvenv.cfg ("" when absent).
func venvConfig(venv, key string) string {
	f, err := os.Open(filepath.Join(venv, "pyvenv.cfg"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
