package agent

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzExtractTar: whatever the stream, nothing lands outside the destination.
func FuzzExtractTar(f *testing.F) {
	f.Add([]byte{})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../b", Mode: 0o777})
	_ = tw.WriteHeader(&tar.Header{Name: "a/f", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		_ = extractTar(bytes.NewReader(b), dst)
		ents, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "dst" {
				t.Fatalf("extract wrote %s outside the destination", e.Name())
			}
		}
		_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755) // so that t.TempDir can remove it
			}
			return nil
		})
	})
}

func FuzzParseNetDev(f *testing.F) {
	f.Add([]byte("h\n bytes\n eth0: 1 2 3 4 5 6 7 8 9 10\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseNetDev(b)
		_, _ = parsePgrp(b)
	})
}
