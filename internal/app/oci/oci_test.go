package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/testenv"
)

// entry is a tar entry of a test layer.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
	uid, gid         int
	xattrs           map[string]string
}

func layer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body)), ModTime: time.Unix(1e9, 0),
			Uid: e.uid, Gid: e.gid}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		for k, v := range e.xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords, h.Format = map[string]string{}, tar.FormatPAX
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// Stored, not compressed: still a gzip layer that Unpack reads, but the tests whose layer
	// is the 145 MB continuum binary spent ~3 s of CPU each deflating it under -race.
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithCompressionLevel(gzip.NoCompression))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func image(t *testing.T, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.Config(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root (mknod, trusted xattrs, overlayfs, runc)")
	}
}

// TestUnpackWhiteoutsThroughOverlay: a file removed and a directory made opaque by an upper layer
// are gone once the layers are stacked with overlayfs, as in the image's filesystem.
func TestUnpackWhiteoutsThroughOverlay(t *testing.T) {
	requireRoot(t)
	img := image(t, v1.Config{},
		layer(t, entry{name: "a/", typ: tar.TypeDir}, entry{name: "a/keep", body: "k"}, entry{name: "a/gone", body: "g"},
			entry{name: "b/", typ: tar.TypeDir}, entry{name: "b/old", body: "o"},
			entry{name: "ln", typ: tar.TypeSymlink, link: "a/keep"}, entry{name: "hard", typ: tar.TypeLink, link: "a/keep"},
			entry{name: "bin/tool", body: "#!/bin/sh\n", mode: 0o4755}),
		layer(t, entry{name: "a/.wh.gone"}, entry{name: "b/.wh..wh..opq"}, entry{name: "b/new", body: "n"}))
	cache := t.TempDir()
	dirs, err := Unpack(img, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 || !strings.Contains(dirs[0], "sha256-") {
		t.Fatalf("layer dirs %v", dirs)
	}
	again, err := Unpack(img, cache) // cached: same directories, nothing unpacked twice
	if err != nil || strings.Join(again, ":") != strings.Join(dirs, ":") {
		t.Fatalf("second unpack %v (%v), want %v", again, err, dirs)
	}
	root, upper, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := unix.Mount("overlay", root, "overlay", 0, "lowerdir="+strings.Join(dirs, ":")+",upperdir="+upper+",workdir="+work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(root, p)); return string(b) }
	if read("a/keep") != "k" || read("ln") != "k" || read("hard") != "k" || read("b/new") != "n" {
		t.Errorf("files of the image: a/keep %q ln %q hard %q b/new %q", read("a/keep"), read("ln"), read("hard"), read("b/new"))
	}
	for _, gone := range []string{"a/gone", "b/old"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want removed by the upper layer's whiteout", gone, err)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "bin/tool")); err != nil || st.Mode()&os.ModeSetuid == 0 || st.Mode().Perm() != 0o755 {
		t.Errorf("bin/tool mode %v (%v), want setuid 0755 kept", st.Mode(), err)
	}
}

// TestUnpackRefusesEscapes: a layer cannot write outside its directory through a symlink it made.
func TestUnpackRefusesEscapes(t *testing.T) {
	requireRoot(t)
	outside := t.TempDir()
	img := image(t, v1.Config{}, layer(t, entry{name: "evil", typ: tar.TypeSymlink, link: outside}, entry{name: "evil/pwned", body: "x"}))
	if _, err := Unpack(img, t.TempDir()); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("unpack through a symlink: %v, want refused", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); !os.IsNotExist(err) {
		t.Error("the layer wrote outside its directory")
	}
	// "../" in names stays inside.
	img = image(t, v1.Config{}, layer(t, entry{name: "../../up", body: "u"}))
	dirs, err := Unpack(img, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[0], "up")); string(b) != "u" {
		t.Errorf("../../up not kept inside the layer: %q", b)
	}
}

// TestLoadFromRegistryLayoutAndTarball: the three ways of naming an image give the same one.
func TestLoadFromRegistryLayoutAndTarball(t *testing.T) {
	img := image(t, v1.Config{Entrypoint: []string{"/x"}}, layer(t, entry{name: "x", body: "y"}))
	want, _ := img.Digest()
	cache := t.TempDir()

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host+"/test/app:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	pulled, err := Load(host+"/test/app:1", "", cache)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled %v, pushed %v", got, want)
	}
	if _, err := Load(host+"/test/missing:1", "", cache); err == nil || !strings.Contains(err.Error(), "pull") {
		t.Errorf("missing image: %v", err)
	}

	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	other := image(t, v1.Config{}, layer(t, entry{name: "z", body: "z"}))
	for n, im := range map[string]v1.Image{"reg.example/team/app:1": img, "reg.example/team/db:2": other} {
		if err := p.AppendImage(im, layout.WithAnnotations(map[string]string{"io.containerd.image.name": n})); err != nil {
			t.Fatal(err)
		}
	}
	for _, pick := range []string{"app", "team/app:1", "reg.example/team/app:1"} {
		got, err := Load(dir, pick, cache)
		if err != nil {
			t.Fatalf("pick %q: %v", pick, err)
		}
		if d, _ := got.Digest(); d != want {
			t.Errorf("pick %q: %v, want %v", pick, d, want)
		}
	}
	if _, err := Load(dir, "", cache); err == nil || !strings.Contains(err.Error(), "name the one to run") {
		t.Errorf("two images, none picked: %v", err)
	}
	if _, err := Load(dir, "web", cache); err == nil || !strings.Contains(err.Error(), "reg.example/team/db:2") {
		t.Errorf("unknown pick: %v, want the names it has", err)
	}

	tb := filepath.Join(t.TempDir(), "app.tar")
	tag, _ := name.NewTag("app:1")
	if err := tarball.WriteToFile(tb, tag, img); err != nil {
		t.Fatal(err)
	}
	got, err := Load(tb, "", cache)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("docker save tarball: %v, want %v", d, want)
	}
	if _, err := Load("./no/such.tar", "", cache); err == nil {
		t.Error("a missing file loads")
	}
}

// TestRunWithRunc runs a static binary as an image's entrypoint with runc: its output, its
// arguments replacing the image's command, the environment, the user, and its exit status.
func TestRunWithRunc(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("runc"); err != nil {
		testenv.SkipOrFail(t, "needs runc (make setup)")
	}
	b, err := os.ReadFile(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	img := image(t, v1.Config{Entrypoint: []string{"/continuum"}, Cmd: []string{"version"}, User: "65532", Env: []string{"A=image"}},
		layer(t, entry{name: "continuum", body: string(b), mode: 0o755}, entry{name: "data/", typ: tar.TypeDir, mode: 0o777}))
	run := func(id string, cmd []string) (string, int) {
		var out bytes.Buffer
		code, err := Run(context.Background(), Options{Image: img, ID: id, Bundle: filepath.Join(t.TempDir(), "b"), CacheDir: t.TempDir(),
			Cmd: cmd, Env: []string{"A=mine"}, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	if out, code := run("t-version", nil); code != 0 || !strings.Contains(out, "continuum") {
		t.Errorf("image's command: exit %d, output %q", code, out)
	}
	if out, code := run("t-bad", []string{"no-such-command"}); code == 0 || !strings.Contains(out, "unknown command") {
		t.Errorf("a failing command: exit %d, output %q: want its non-zero status", code, out)
	}
}

// staticBinary is a statically linked continuum binary (an image has no C library): make's
// ($CONTINUUM_BIN, built with CGO_ENABLED=0) or one built so.
func staticBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CONTINUUM_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "continuum")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/continuum-project/continuum/cmd/continuum")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a static continuum: %v\n%s", err, out)
	}
	return bin
}

// TestExecWaitsForTheContainer: a health check started before its container runs waits for it,
// as Docker starts health checks when the container starts (a check that ran earlier and failed
// made a slow start count as unhealthy); with a timeout shorter than the start, it times out.
func TestExecWaitsForTheContainer(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("runc"); err != nil {
		testenv.SkipOrFail(t, "needs runc (make setup)")
	}
	b, err := os.ReadFile(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	img := image(t, v1.Config{Entrypoint: []string{"/continuum"}, Cmd: []string{"echo", "--listen", "127.0.0.1:0"}},
		layer(t, entry{name: "continuum", body: string(b), mode: 0o755}))
	bundle, id := filepath.Join(t.TempDir(), "b"), "t-exec-wait"

	// Nothing runs yet: a short timeout expires waiting.
	if _, err := Exec(context.Background(), "", bundle, id, []string{"/continuum", "version"}, 300*time.Millisecond, io.Discard, io.Discard); !errors.Is(err, ErrTimeout) {
		t.Fatalf("exec before the container exists, 300 ms timeout: %v, want ErrTimeout", err)
	}

	type result struct {
		code int
		out  string
		err  error
	}
	execDone := make(chan result, 1)
	go func() { // started before the container: it must wait, not fail
		var out bytes.Buffer
		code, err := Exec(context.Background(), "", bundle, id, []string{"/continuum", "version"}, 2*time.Minute, &out, &out)
		execDone <- result{code, out.String(), err}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{Image: img, ID: id, Bundle: bundle, CacheDir: t.TempDir(), Stdout: io.Discard, Stderr: io.Discard})
		runDone <- err
	}()
	defer func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	select {
	case r := <-execDone:
		if r.err != nil || r.code != 0 || !strings.Contains(r.out, "continuum") {
			t.Errorf("exec started before the container: exit %d, err %v, output %q; want continuum version's output", r.code, r.err, r.out)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("exec did not finish within its timeout")
	}
}

// TestResolveUserReadsInsideTheImage: the image's /etc/passwd was read by its host path
// (filepath.Join(rootfs, "etc/passwd"), os.Open following links), so an image whose /etc is a
// symbolic link to an absolute path made the host's file be read, and a FIFO there hung the
// run. It is read inside the image as the container sees it: an absolute link leads to the
// image's own file, a FIFO or a directory is an error at once.
func TestResolveUserReadsInsideTheImage(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "passwd"), []byte("alice:x:4242:4243::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	if err := os.Symlink(host, filepath.Join(rootfs, "etc")); err != nil { // as a layer's "etc" -> "/etc"
		t.Fatal(err)
	}
	uid, gid, err := resolveUser(rootfs, "alice")
	if err == nil {
		t.Fatalf("resolveUser read the host's %s/passwd through the image's /etc link: uid %d gid %d", host, uid, gid)
	}
	// The same absolute link, resolved in the image: its own file.
	if err := os.MkdirAll(filepath.Join(rootfs, host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, host, "passwd"), []byte("alice:x:1000:1001::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, host, "group"), []byte("staff:x:50:alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if uid, gid, err := resolveUser(rootfs, "alice"); err != nil || uid != 1000 || gid != 1001 {
		t.Errorf("resolveUser(alice) = %d, %d, %v; want the image's 1000, 1001", uid, gid, err)
	}
	if uid, gid, err := resolveUser(rootfs, "alice:staff"); err != nil || uid != 1000 || gid != 50 {
		t.Errorf("resolveUser(alice:staff) = %d, %d, %v; want 1000, 50", uid, gid, err)
	}
	if uid, gid, err := resolveUser(rootfs, "1000"); err != nil || uid != 1000 || gid != 1001 {
		t.Errorf("resolveUser(1000) = %d, %d, %v; want 1000 and its group 1001", uid, gid, err)
	}
	// A FIFO (or anything but a regular file) as /etc/passwd: an error, not a hang.
	fifo := t.TempDir()
	if err := os.Mkdir(filepath.Join(fifo, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(fifo, "etc", "passwd"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := resolveUser(fifo, "alice"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("resolveUser with a FIFO as /etc/passwd = %v; want it refused as not a regular file", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("resolveUser hangs on a FIFO as the image's /etc/passwd")
	}
}
