package server

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
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
