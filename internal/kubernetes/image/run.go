package image

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/continuum-project/continuum/internal/tools"
	"github.com/continuum-project/continuum/internal/version"
)

// Config says which images Run builds, from what, and where they go.
type Config struct {
	// Out is the directory the tarballs are written to (<image>.tar), created if missing.
	Out string
	// Images are names from Images; default continuum, proxy and python.
	Images []string
	// Repository is prefixed to each image's repository (default continuum-project; a
	// registry host may lead it, e.g. registry.lan:5000/continuum-project).
	Repository string
	// Tag of every image (default the build's version, the chart's appVersion).
	Tag string
	// ContinuumBinary and ProxyBinary are static binaries to put in the images; "" builds them
	// from Root with CGO_ENABLED=0 and -trimpath.
	ContinuumBinary, ProxyBinary string
	// Root is the clone: cmd/, python/, .tools/venv and .tools/venv-fl.
	Root string
	// Epoch is the time every generated entry, history line and the image config carry
	// (SOURCE_DATE_EPOCH, else the Unix epoch).
	Epoch time.Time
	// Logf reports progress (nil: silent).
	Logf func(format string, args ...any)
	// LayerStore keeps compressed layers across builds, by their content (layercache.go);
	// "" compresses every layer at every build.
	LayerStore string
}

// DefaultConfig builds the usual images into images/ with the epoch from $SOURCE_DATE_EPOCH.
func DefaultConfig() Config {
	var store string
	if c := tools.CacheDir(); c != "" {
		store = filepath.Join(c, "layers")
	}
	return Config{Out: "images", Images: []string{"continuum", "proxy", "python"}, Repository: "continuum-project",
		Tag: version.Version, Epoch: time.Unix(0, 0).UTC(), LayerStore: store}
}

// EpochFromEnv is $SOURCE_DATE_EPOCH as a time (the reproducible-builds convention), or the Unix
// epoch when it is unset.
func EpochFromEnv() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since 1970 (a non-negative integer)", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Validate checks the config, naming the field and what is allowed.
func (c *Config) Validate() error {
	if c.Out == "" {
		return fmt.Errorf("out: name the directory the tarballs go to")
	}
	if len(c.Images) == 0 {
		return fmt.Errorf("images: name at least one of %s", imageNames())
	}
	for _, n := range c.Images {
		if !slices.ContainsFunc(Images, func(i struct{ Name, Repos, About string }) bool { return i.Name == n }) {
			return fmt.Errorf("images: unknown image %q (want %s)", n, imageNames())
		}
	}
	if c.Tag == "" || strings.ContainsAny(c.Tag, "/:@ ") {
		return fmt.Errorf("tag %q: want a tag such as %s (no '/', ':', '@' or spaces)", c.Tag, version.Version)
	}
	if c.Repository == "" || strings.HasSuffix(c.Repository, "/") {
		return fmt.Errorf("repository %q: want a repository prefix such as continuum-project", c.Repository)
	}
	if _, err := name.ParseReference(c.Repository + "/continuum:" + c.Tag); err != nil {
		return fmt.Errorf("repository %q with tag %q: not a valid image reference (lower-case letters, digits, '.', '_', '-' and '/'; a registry host may lead): %w", c.Repository, c.Tag, err)
	}
	return nil
}

func imageNames() string {
	var n []string
	for _, i := range Images {
		n = append(n, i.Name)
	}
	return strings.Join(n, ", ")
}

// Result is one tarball Run wrote and the images it holds.
type Result struct {
	Tarball string
	Images  []Built
	// Missing lists libraries a program in the image needs but this host lacks (left out).
	Missing []string
}

// Built is one image: its full name and manifest digest.
type Built struct {
	Ref, Digest string
}

// Run builds the images cfg names and writes one tarball per image into cfg.Out.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(cfg.Out, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	needs := func(names ...string) bool {
		return slices.ContainsFunc(cfg.Images, func(n string) bool { return slices.Contains(names, n) })
	}
	continuum, proxy := cfg.ContinuumBinary, cfg.ProxyBinary
	if continuum == "" && needs("continuum", "python", "fl") {
		continuum = filepath.Join(tmp, "continuum")
		logf("building %s (CGO_ENABLED=0, -trimpath)", continuum)
		if err := GoBuild(ctx, cfg.Root, "./cmd/continuum", continuum); err != nil {
			return nil, err
		}
	}
	if proxy == "" && needs("proxy") {
		proxy = filepath.Join(tmp, "continuum-proxy")
		logf("building %s (CGO_ENABLED=0, -trimpath)", proxy)
		if err := GoBuild(ctx, cfg.Root, "./cmd/continuum-proxy", proxy); err != nil {
			return nil, err
		}
	}
	for _, bin := range []string{continuum, proxy} {
		if bin != "" {
			if err := checkStatic(bin); err != nil {
				return nil, err
			}
		}
	}
	var store *layerStore
	if cfg.LayerStore != "" {
		store = &layerStore{dir: cfg.LayerStore}
		defer func() {
			if err := store.trim(layerStoreMax); err != nil {
				logf("layer store %s: %v", cfg.LayerStore, err)
			}
		}()
	}
	var results []Result
	for _, name := range cfg.Images {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		logf("image %s", name)
		specs, missing, err := recipe(name, cfg, continuum, proxy)
		if err != nil {
			return results, err
		}
		res := Result{Tarball: filepath.Join(cfg.Out, name+".tar"), Missing: missing}
		var named []Named
		cache := layerCache{}
		for _, s := range specs {
			img, err := build(s, cfg.Epoch, tmp, cache, store)
			if err != nil {
				return results, err
			}
			d, err := img.Digest()
			if err != nil {
				return results, err
			}
			named = append(named, Named{Ref: s.Name, Image: img})
			res.Images = append(res.Images, Built{Ref: FullName(s.Name), Digest: d.String()})
		}
		if err := WriteTarball(res.Tarball, named, cfg.Epoch); err != nil {
			return results, fmt.Errorf("%s: %w", res.Tarball, err)
		}
		results = append(results, res)
	}
	return results, nil
}

// recipe is what image name holds.
func recipe(name string, cfg Config, continuum, proxy string) ([]Spec, []string, error) {
	ref := func(repo string) string { return cfg.Repository + "/" + repo + ":" + cfg.Tag }
	labels := func(title string) map[string]string {
		return map[string]string{"org.opencontainers.image.title": title, "org.opencontainers.image.version": cfg.Tag}
	}
	user := fmt.Sprintf("%d:%d", UID, GID)
	switch name {
	case "continuum":
		bin, err := binaryTree(ContinuumPath, continuum)
		if err != nil {
			return nil, nil, err
		}
		layers := []Layer{{baseTree(), "base: user continuum, /tmp, CA certificates"}, {bin, "continuum"}}
		return []Spec{
			{Name: ref("continuum"), Layers: layers, Entrypoint: []string{ContinuumPath}, User: user, WorkingDir: homeDir, Labels: labels("continuum")},
			// The pods' sandbox: the same layers, so the one-node cluster needs no pause image.
			{Name: ref("continuum-pause"), Layers: layers, Entrypoint: []string{ContinuumPath, "cluster", "pause"}, User: user, WorkingDir: "/", Labels: labels("continuum-pause")},
		}, nil, nil
	case "proxy":
		bin, err := binaryTree(ProxyPath, proxy)
		if err != nil {
			return nil, nil, err
		}
		return []Spec{{Name: ref("continuum-proxy"), Layers: []Layer{{baseTree(), "base: user continuum, /tmp, CA certificates"}, {bin, "continuum-proxy"}},
			Entrypoint: []string{ProxyPath}, User: user, WorkingDir: homeDir, Labels: labels("continuum-proxy")}}, nil, nil
	case "python", "fl":
		return pythonRecipe(name, cfg, continuum, ref, labels(ref(name)), user)
	}
	return nil, nil, fmt.Errorf("unknown image %q (want %s)", name, imageNames())
}

func pythonRecipe(name string, cfg Config, continuum string, ref func(string) string, labels map[string]string, user string) ([]Spec, []string, error) {
	runtime := NewTree()
	runtime.KeepTimes = true
	h := newHostFiles(runtime)
	ver, err := pythonRuntime(h)
	if err != nil {
		return nil, nil, err
	}
	venv := NewTree()
	venv.KeepTimes = true
	vdir, vname, env := ".tools/venv", "venv", []string{"CONTINUUM_PYTHON=" + PythonRoot + "/venv/bin/python"}
	if name == "fl" {
		vdir, vname, env = ".tools/venv-fl", "venv-fl", []string{"CONTINUUM_FL_PYTHON=" + PythonRoot + "/venv-fl/bin/python"}
	}
	// Libraries the venv's compiled packages need from the system go into the runtime layer.
	hv := &hostFiles{t: venv, libDirs: h.libDirs, mapped: h.mapped, seen: h.seen, missing: h.missing}
	if err := venvTree(hv, PythonRoot+"/"+vname, filepath.Join(cfg.Root, vdir), ver); err != nil {
		return nil, nil, err
	}
	for p, e := range venv.entries {
		if !strings.HasPrefix(p, strings.TrimPrefix(PythonRoot, "/")+"/") {
			runtime.entries[p] = e
			delete(venv.entries, p)
		}
	}
	src, err := sourcesTree(cfg.Root)
	if err != nil {
		return nil, nil, err
	}
	bin, err := binaryTree(ContinuumPath, continuum)
	if err != nil {
		return nil, nil, err
	}
	env = append(env, "PATH="+PythonRoot+"/"+vname+"/bin:/usr/local/bin:/usr/bin:/bin",
		"CONTINUUM_PYTHON_SRC="+PythonRoot+"/python/src", "PYTHONDONTWRITEBYTECODE=1")
	repo := map[string]string{"python": "continuum-python", "fl": "continuum-fl"}[name]
	labels["org.opencontainers.image.title"] = repo
	return []Spec{{Name: ref(repo), User: user, WorkingDir: homeDir, Env: env, Labels: labels,
		Entrypoint: []string{ContinuumPath},
		Layers: []Layer{
			{baseTree(), "base: user continuum, /tmp, CA certificates"},
			{runtime, "python " + ver + " from this host, with the libraries it and " + vdir + " load"},
			{venv, vdir + " (python " + readVenvVersion(filepath.Join(cfg.Root, vdir)) + ")"},
			{src, "python/src and python/functions"},
			{bin, "continuum"},
		}}}, h.Missing(), nil
}

// GoBuild builds the main package pkg of the module at root into out as a static binary
// (CGO_ENABLED=0) without file system paths or a build id (-trimpath, -buildid=), so the same
// sources and toolchain give the same bytes.
func GoBuild(ctx context.Context, root, pkg, out string) error {
	commit := ""
	if b, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(b))
	}
	ldflags := "-s -w -buildid= -X github.com/continuum-project/continuum/internal/version.Commit=" + commit
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// checkStatic refuses a dynamically linked binary: the images have no C library, so it would not
// start (in a pod's sandbox, the pause process failing makes every container of the pod fail with
// a runc error that names a namespace, not the binary).
func checkStatic(path string) error {
	f, err := elf.Open(path)
	var ferr *elf.FormatError
	if errors.As(err, &ferr) {
		return nil // not an ELF file (a script): nothing to say about its linking
	}
	if err != nil {
		return fmt.Errorf("binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s is dynamically linked and the images have no C library: build it with CGO_ENABLED=0 (make build does)", path)
		}
	}
	return nil
}
