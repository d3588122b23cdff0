package server

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// sparseSnapshotBody is a PAX (GNU sparse 1.0) tar of one regular file "f" of realsize bytes,
// all a hole but its last byte: typeflag '0', so RestoreSnapshot's "regular files, flat" check
// passes it.
func sparseSnapshotBody(realsize int64) []byte {
	block := func(name string, typ byte, size int64) []byte {
		b := make([]byte, 512)
		copy(b[0:], name)
		copy(b[100:], "0000644\x00")
		copy(b[108:], "0000000\x00")
		copy(b[116:], "0000000\x00")
		copy(b[124:], fmt.Sprintf("%011o\x00", size))
		copy(b[136:], "00000000000\x00")
		b[156] = typ
		copy(b[257:], "ustar\x0000")
		for i := 148; i < 156; i++ {
			b[i] = ' '
		}
		sum := 0
		for _, c := range b {
			sum += int(c)
		}
		copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
		return b
	}
	pad := func(b []byte) []byte {
		if r := len(b) % 512; r != 0 {
			b = append(b, make([]byte, 512-r)...)
		}
		return b
	}
	rec := func(k, v string) string {
		n := len(k) + len(v) + 3
		for {
			s := fmt.Sprintf("%d %s=%s\n", n, k, v)
			if len(s) == n {
				return s
			}
			n = len(s)
		}
	}
	pax := rec("GNU.sparse.major", "1") + rec("GNU.sparse.minor", "0") + rec("GNU.sparse.name", "f") +
		rec("GNU.sparse.realsize", strconv.FormatInt(realsize, 10))
	data := append(pad([]byte(fmt.Sprintf("1\n%d\n1\n", realsize-1))), 'x')
	var out []byte
	out = append(out, block("PaxHeaders/f", tar.TypeXHeader, int64(len(pax)))...)
	out = append(out, pad([]byte(pax))...)
	out = append(out, block("f", tar.TypeReg, int64(len(data)))...)
	out = append(out, pad(data)...)
	return append(out, make([]byte, 1024)...)
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
