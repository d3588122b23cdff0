package httpauth_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/continuum-project/continuum/internal/httpauth"
)

// TestAttackTokenFileOthersCanWrite: a token file that any local user can write (or a token path
// that is a symlink into such a file) is read and trusted as is: whoever can write it picks the
// API token. LoadOrCreateToken also keeps an existing token directory's loose mode (MkdirAll
// does not tighten it), so a 0777 directory lets another user swap the file.
func TestAttackTokenFileOthersCanWrite(t *testing.T) {
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

// TestAttackConcurrentStartReadsEmptyToken: LoadOrCreateToken says two servers started at once
// on one path cannot each write a token, "the second reads the first's". But the first creates
// the file (O_EXCL) and writes the token afterwards: a second that arrives in between reads an
// empty file and fails to start ("token file ... is empty"); a crash in that window leaves the
// empty file behind for good.
func TestAttackConcurrentStartReadsEmptyToken(t *testing.T) {
	for i := 0; i < 200; i++ {
		path := filepath.Join(t.TempDir(), "secrets", "api-token")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for k := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[k] = httpauth.LoadOrCreateToken(path)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("attempt %d: a server started alongside another failed: %v", i, err)
			}
		}
	}
}
