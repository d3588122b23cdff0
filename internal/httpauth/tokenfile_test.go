package httpauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/continuum-project/continuum/internal/httpauth"
)

// TestTokenFileOthersCanWriteIsRefused: a token file that any local user can write (or a token
// path that is a symlink into such a file) must not be trusted: whoever can write it would pick
// the API token. Nor may LoadOrCreateToken generate a token into a directory others can write
// (they could swap the file).
func TestTokenFileOthersCanWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	writable := filepath.Join(dir, "planted")
	if err := os.WriteFile(writable, []byte("attacker-chosen\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	if tok, err := httpauth.ReadToken(writable); err == nil {
		t.Errorf("ReadToken of a world-writable (0666) file accepted its token %q", tok)
	}
	link := filepath.Join(dir, "token")
	if err := os.Symlink(writable, link); err != nil {
		t.Fatal(err)
	}
	if tok, _, err := httpauth.LoadOrCreateToken(link); err == nil {
		t.Errorf("LoadOrCreateToken through a symlink to a world-writable file accepted %q", tok)
	}
	fresh := filepath.Join(dir, "fresh-token")
	if _, gen, err := httpauth.LoadOrCreateToken(fresh); err == nil && gen {
		if fi, _ := os.Stat(dir); fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("generated a token into %s, mode %v: another user can replace it", dir, fi.Mode().Perm())
		}
	}
}

// TestConcurrentStartsShareOneWrittenToken: servers started at once on one token path all start,
// with one token: none reads the file half-written (it was once created empty, then written, so
// a second server arriving in between failed with "token file ... is empty").
func TestConcurrentStartsShareOneWrittenToken(t *testing.T) {
	for i := 0; i < 200; i++ {
		path := filepath.Join(t.TempDir(), "secrets", "api-token")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		toks := make([]string, 4)
		for k := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				toks[k], _, errs[k] = httpauth.LoadOrCreateToken(path)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("attempt %d: a server started alongside another failed: %v", i, err)
			}
		}
		for k := range toks {
			if toks[k] != toks[0] {
				t.Fatalf("attempt %d: servers started at once got different tokens %q", i, toks)
			}
		}
	}
}

// TestTokenFileKubernetesSecretLayout: kubelet mounts a Secret's keys as symlinks into a
// timestamped directory (token -> ..data/token, ..data -> ..2026_12_06_x), files 0400 or 0440,
// owned by root with the pod's fsGroup as group. Such a token is read.
func TestTokenFileKubernetesSecretLayout(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "..2026_12_06_15_00_00.123")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o400, 0o440, 0o644} {
		file := filepath.Join(ts, "token")
		_ = os.Remove(file)
		if err := os.WriteFile(file, []byte("s3cret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Chown(file, 0, 2000); err != nil { // root:fsGroup
				t.Fatal(err)
			}
		}
		_ = os.Remove(filepath.Join(dir, "..data"))
		_ = os.Remove(filepath.Join(dir, "token"))
		if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", "token"), filepath.Join(dir, "token")); err != nil {
			t.Fatal(err)
		}
		if tok, err := httpauth.ReadToken(filepath.Join(dir, "token")); err != nil || tok != "s3cret" {
			t.Errorf("Secret-mounted token, mode %#o: %q %v, want it read", mode, tok, err)
		}
	}
}

// TestTokenFileNotRegularOrOthersOwnIsRefused: a FIFO (it would block the start) or a directory
// is not a token file, and neither is a file another user owns; the error names the file and
// what is wanted.
func TestTokenFileNotRegularOrOthersOwnIsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir} {
		if _, err := httpauth.ReadToken(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadToken(%s): %v, want a refusal naming it not a regular file", p, err)
		}
	}
	loose := filepath.Join(dir, "loose")
	_ = os.WriteFile(loose, []byte("x"), 0o600)
	_ = os.Chmod(loose, 0o620)
	if _, err := httpauth.ReadToken(loose); err == nil || !strings.Contains(err.Error(), loose) || !strings.Contains(err.Error(), "0620") {
		t.Errorf("ReadToken of a 0620 file: %v, want a refusal naming the file and its mode", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the other-owner case needs root to chown")
	}
	other := filepath.Join(dir, "other")
	_ = os.WriteFile(other, []byte("x"), 0o600)
	if err := os.Chown(other, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if _, err := httpauth.ReadToken(other); err == nil || !strings.Contains(err.Error(), "uid 4242") {
		t.Errorf("ReadToken of a file owned by uid 4242: %v, want a refusal naming the owner", err)
	}
}
