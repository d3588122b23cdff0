package kubeplatform

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/kubernetes/cluster"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/testenv"
)

// clusterEnv is the one-node cluster the package's end-to-end tests share (bringing one up
// costs tens of seconds), with the project's image built and imported.
type clusterEnv struct {
	cl     *cluster.Cluster
	dirs   []string // temporary directories, removed with the cluster
	bin    string   // the static continuum binary the image holds
	root   string   // the repository
	images string   // the directory holding continuum.tar
	prov   Provider
}

var shared struct {
	once sync.Once
	env  *clusterEnv
	err  error
	took time.Duration
}

// built holds the images the package's clusters load, built once (builtImages).
var built struct {
	once sync.Once
	dir  string
	err  error
}

// builtImages builds the continuum and python images of bin once for the package's clusters
// (the shared one and the fabric test's) into a temporary directory (continuum.tar,
// python.tar), tagged testImage and testPythonImage, and returns it.
func builtImages(bin, root string) (string, error) {
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "kubeplatform-images-"); built.err != nil {
			return
		}
		built.err = buildImage(bin, root, built.dir)
	})
	return built.dir, built.err
}

// TestMain takes the shared cluster down after the package's tests, and removes the images.
func TestMain(m *testing.M) {
	code := m.Run()
	defer func() {
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
		os.Exit(code)
	}()
	if shared.env != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		if err := shared.env.cl.Down(ctx); err != nil {
			os.Stderr.WriteString("cluster down: " + err.Error() + "\n")
			code = 1
		}
		cancel()
		for _, d := range shared.env.dirs {
			os.RemoveAll(d)
		}
	}
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// sharedCluster skips (or fails, where the suite must run) without what a cluster needs, and
// otherwise returns the package's cluster, bringing it up on first use.
func sharedCluster(t *testing.T) *clusterEnv {
	t.Helper()
	binDir, bin := clusterNeeds(t)
	shared.once.Do(func() {
		start := time.Now()
		shared.env, shared.err = upCluster(binDir, bin)
		shared.took = time.Since(start)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	t.Logf("shared cluster: up in %v (once for the package)", shared.took.Round(time.Second))
	return shared.env
}

// clusterNeeds skips (or fails, where the suite must run) without what a cluster needs: root,
// the Kubernetes binaries and the static continuum binary; it returns where the last two are.
func clusterNeeds(t *testing.T) (binDir, bin string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root (containerd, kubelet, the pod network)")
	}
	binDir, err := controlplane.FindBinDir()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	bin = os.Getenv("CONTINUUM_BIN")
	if bin == "" {
		testenv.SkipOrFail(t, "CONTINUUM_BIN: the static continuum binary the node pods' image is built from (make test sets it)")
	}
	return binDir, bin
}

func upCluster(binDir, bin string) (_ *clusterEnv, err error) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		return nil, err
	}
	images, err := builtImages(bin, root)
	if err != nil {
		return nil, err
	}
	state, err := os.MkdirTemp("", "kubeplatform-cluster-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(state)
		}
	}()
	cfg := cluster.DefaultConfig()
	cfg.StateDir = filepath.Join(state, "cluster")
	cfg.BinDir, cfg.ContinuumBin = binDir, bin
	cfg.Images = []string{filepath.Join(images, "continuum.tar"), filepath.Join(images, "python.tar")}
	if cfg.SandboxImage, err = cluster.SandboxFrom(cfg.Images); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl, err := cluster.Up(ctx, cfg, testLogger())
	if err != nil {
		return nil, err
	}
	return &clusterEnv{cl: cl, bin: bin, root: root, images: images, dirs: []string{state},
		prov: Provider{Kubeconfig: cl.Kubeconfig(), Image: testImage, PullPolicy: "Never",
			Containerd: cl.ContainerdSocket()}}, nil
}

// testImage is the node pods' image the tests build (buildImage) and run; testPythonImage the
// python image (continuum and the functions' Python), for node pods that run functions.
const (
	testImage       = "continuum-project/continuum:kubeplatform-test"
	testPythonImage = "continuum-project/continuum-python:kubeplatform-test"
)

// buildImage builds the continuum and python images of bin into dir.
func buildImage(bin, root, dir string) error {
	build := exec.Command(bin, "image", "build", "--out", dir, "--images", "continuum,python", "--tag", "kubeplatform-test",
		"--continuum-binary", bin, "--root", root)
	if b, err := build.CombinedOutput(); err != nil {
		return &buildError{cmd: build.String(), err: err, out: string(b)}
	}
	return nil
}

type buildError struct {
	cmd, out string
	err      error
}

func (e *buildError) Error() string { return e.cmd + ": " + e.err.Error() + "\n" + e.out }

// runSelector selects the objects of the run whose results are in runDir (its run.json's
// testbed name is the run's): the package's cluster tests run side by side on the shared
// cluster, each checking what its own run left.
func runSelector(t *testing.T, runDir string) metav1.ListOptions {
	t.Helper()
	var r results.Run
	if err := results.ReadJSON(filepath.Join(runDir, "run.json"), &r); err != nil || r.Testbed == "" {
		t.Fatalf("run.json of %s: %v (testbed %q)", runDir, err, r.Testbed)
	}
	return metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy + "," + LabelRun + "=" + labelValue(r.Testbed)}
}
