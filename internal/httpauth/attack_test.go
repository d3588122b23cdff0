package httpauth_test

import (
	"os"
	"path/filepath"
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
