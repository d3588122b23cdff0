package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// startContainerd runs a containerd of its own (own root, state and socket; no CRI plugin) for
// the test, and returns its socket. It is killed and its directories removed at cleanup.
func startContainerd(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	for _, bin := range []string{"containerd", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
				t.Fatalf("%s not found: make setup installs Debian's containerd", bin)
			}
			t.Skipf("%s not found", bin)
		}
	}
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "c.sock")
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc", filepath.Join(dir, "opt"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("containerd log:\n%s", b)
			}
		}
		_ = os.RemoveAll(dir)
	})
	testenv.EventuallyNoError(t, 30*time.Second, "containerd answers", func() error {
		return exec.Command("ctr", "--address", sock, "version").Run()
	})
	return sock
}

// TestContainerdImportsTheTarballs imports the tarballs with containerd's own client, as the
// one-node cluster does, and finds every image under the name the chart's pods ask for.
func TestContainerdImportsTheTarballs(t *testing.T) {
	sock := startContainerd(t)
	res := buildBinaryImages(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "-n", "continuum-test"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, r := range res {
		ctr("images", "import", r.Tarball)
	}
	list := ctr("images", "ls")
	for _, r := range res {
		for _, img := range r.Images {
			// ctr lists the name and, in the same line, the manifest digest it was stored under.
			found := false
			for _, line := range strings.Split(list, "\n") {
				if strings.HasPrefix(line, img.Ref+" ") && strings.Contains(line, img.Digest) {
					found = true
				}
			}
			if !found {
				t.Errorf("containerd has no %s at %s after the import:\n%s", img.Ref, img.Digest, list)
			}
		}
	}
}
