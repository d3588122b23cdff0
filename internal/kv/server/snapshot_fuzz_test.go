package server

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive/archivetest"
)

// snapshotOf builds a snapshot file's bytes: a tar archive of files and its SHA-256.
func snapshotOf(t testing.TB, files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	sum := sha256.Sum256(buf.Bytes())
	return append(buf.Bytes(), sum[:]...)
}

// RestoreSnapshot takes a file from outside: whatever it holds, it returns an error or restores,
// never panics, and never writes outside the data directory.
func FuzzRestoreSnapshot(f *testing.F) {
	f.Add(snapshotOf(f, map[string]string{"../escape": "x"}))
	f.Add(snapshotOf(f, map[string]string{"sub/file": "x"}))
	f.Add(snapshotOf(f, map[string]string{"OPTIONS-000001": "not pebble"}))
	sparse := sparseSnapshotBody(1 << 20)
	sparseSum := sha256.Sum256(sparse)
	f.Add(append(sparse, sparseSum[:]...))
	f.Add([]byte("short"))
	f.Add(make([]byte, 512+sha256.Size))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, "in.snap")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_ = RestoreSnapshot(file, filepath.Join(dir, "data", "restored"))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "in.snap" && e.Name() != "data" {
				t.Fatalf("restore wrote %s outside the data directory", e.Name())
			}
		}
	})
}

func TestRestoreSnapshotRefusesPathsAndNonStores(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"path escape": {"../escape": "x"},
		"subdir":      {"sub/file": "x"},
		"not a store": {"OPTIONS-000001": "not pebble"},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "in.snap")
		os.WriteFile(file, snapshotOf(t, files), 0o600)
		if err := RestoreSnapshot(file, filepath.Join(dir, "restored")); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}

// sparseSnapshotBody is a tar of one regular file "f" of realsize bytes, all a hole but its
// last byte (archivetest.PAXSparseEntry), with the end-of-archive blocks.
func sparseSnapshotBody(realsize int64) []byte {
	return append(archivetest.PAXSparseEntry("f", realsize), make([]byte, 1024)...)
}

// TestRestoreSnapshotRefusesSparseFiles: a 3.5 KB snapshot file (its SHA-256 is the file's
// own, so anyone who can hand one over can make one) holding a sparse file would restore as
// realsize bytes of zeros written to the data directory (archive/tar reads the holes as
// zeros). 64 MiB here; a realsize of 2^62 fills the disk. It is refused before a byte is
// written.
func TestRestoreSnapshotRefusesSparseFiles(t *testing.T) {
	const realsize = 64 << 20
	body := sparseSnapshotBody(realsize)
	sum := sha256.Sum256(body)
	file := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(file, append(body, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	err := RestoreSnapshot(file, dataDir)
	if err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Errorf("restore = %v; want the sparse file refused", err)
	}
	var st unix.Stat_t
	if serr := unix.Lstat(filepath.Join(dataDir, "f"), &st); serr == nil && st.Blocks*512 > 16*int64(len(body)) {
		t.Fatalf("restore = %v; a %d-byte snapshot wrote %d bytes to the data directory", err, len(body)+len(sum), st.Blocks*512)
	}
}
