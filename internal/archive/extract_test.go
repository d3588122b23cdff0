package archive

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive/archivetest"
)

// Guarantees found wanting in review (issue 41's attacks on the extraction routine): each
// test failed before its fix.

// TestExtractLinksInsideChecksHardLinksToSymlinks: with LinksInside and HardLinks, a hard link
// to a symbolic link the archive made is a second symbolic link (linkat does not follow) whose
// text is read from the hard link's directory, not the original's: "a/l" -> "../decoy"
// (inside: root/decoy) linked as "h" at the root is root/h -> ../decoy, the decoy beside the
// root. It is checked as a link the archive made, and removed.
func TestExtractLinksInsideChecksHardLinksToSymlinks(t *testing.T) {
	_, root, decoy := arena(t)
	p := Policy{Symlinks: true, HardLinks: true, LinksInside: true}
	tb := archivetest.Headers(t,
		&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "decoy/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../decoy"},
		&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "a/l"},
	)
	err := Extract(bytes.NewReader(tb), root, p)
	if err == nil || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("extract = %v; want the hard link h refused as a link out of the destination", err)
	}
	real, rerr := filepath.EvalSymlinks(filepath.Join(root, "h"))
	if rerr == nil && real != root && !strings.HasPrefix(real, root+"/") {
		b, _ := os.ReadFile(filepath.Join(root, "h", "secret"))
		t.Fatalf("extract = %v; the link %s/h resolves to %s, outside the root (reads %q); want every link inside with LinksInside (decoy %s)",
			err, root, real, b, decoy)
	}
}

// paxSparseTar is a PAX (GNU sparse 1.0) tar of one regular file "f" of realsize bytes, all a
// hole but its last byte: about 2.5 KB of archive.
func paxSparseTar(realsize int64) []byte {
	return append(archivetest.PAXSparseEntry("f", realsize), make([]byte, 1024)...)
}

// gnuSparseEntry is the blocks of an old GNU sparse entry (typeflag 'S', the map in the
// header): a file name of realsize bytes, all a hole but its last byte.
func gnuSparseEntry(name string, realsize int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", 1))
	copy(b[136:], "00000000000\x00")
	b[156] = tar.TypeGNUSparse
	copy(b[257:], "ustar  \x00")
	copy(b[386:], fmt.Sprintf("%011o\x00", realsize-1)) // one data fragment: its offset,
	copy(b[398:], fmt.Sprintf("%011o\x00", 1))          // its length
	copy(b[483:], fmt.Sprintf("%011o\x00", realsize))   // the file's real size
	for i := 148; i < 156; i++ {
		b[i] = ' '
	}
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	data := make([]byte, 512)
	data[0] = 'x'
	return append(b, data...)
}

// TestExtractRefusesSparseEntries: archive/tar reads a GNU sparse entry's holes as zeros, so a
// few KB of archive (any policy, a kv snapshot's TypeReg check included: a PAX sparse entry is
// typeflag '0') would write realsize bytes of real zeros: an unbounded disk (and time)
// amplification, no compression needed. 64 MiB here; 2^62 would hang. Sparse entries are
// refused by name, before anything is written.
func TestExtractRefusesSparseEntries(t *testing.T) {
	const realsize = 64 << 20
	tb := paxSparseTar(realsize)
	root := filepath.Join(t.TempDir(), "root")
	err := Extract(bytes.NewReader(tb), root, Policy{Sync: true})
	if err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Errorf("extract = %v; want the sparse entry refused", err)
	}
	var st unix.Stat_t
	if serr := unix.Lstat(filepath.Join(root, "f"), &st); serr == nil && st.Blocks*512 > 16*int64(len(tb)) {
		t.Fatalf("extract = %v; a %d-byte archive wrote %d bytes of disk (%q is %d bytes, its holes written as zeros)",
			err, len(tb), st.Blocks*512, "f", st.Size)
	}
}

// TestExtractRefusesOldGNUSparseEntries: GNU's older sparse format (typeflag 'S') is refused
// by name too.
func TestExtractRefusesOldGNUSparseEntries(t *testing.T) {
	tb := append(gnuSparseEntry("f", 64<<20), make([]byte, 1024)...)
	root := filepath.Join(t.TempDir(), "root")
	err := Extract(bytes.NewReader(tb), root, LayerPolicy)
	if err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Errorf("extract = %v; want the sparse entry refused", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "f")); err == nil {
		t.Error("the sparse file was written")
	}
}

// TestExtractBoundsBytesWritten: MaxBytes refuses the entry that would pass it, naming the
// limit, before writing it; the files before it are written whole.
func TestExtractBoundsBytesWritten(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		size int
	}{{"a", 600}, {"b", 400}, {"c", 1}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(f.size)}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(bytes.Repeat([]byte("x"), f.size))
	}
	_ = tw.Close()
	root := filepath.Join(t.TempDir(), "root")
	err := Extract(bytes.NewReader(buf.Bytes()), root, Policy{MaxBytes: 1000})
	if err == nil || !strings.Contains(err.Error(), `"c"`) || !strings.Contains(err.Error(), "1000 bytes") {
		t.Fatalf("extract = %v; want c refused for passing 1000 bytes", err)
	}
	for name, want := range map[string]int64{"a": 600, "b": 400} {
		if fi, err := os.Stat(filepath.Join(root, name)); err != nil || fi.Size() != want {
			t.Errorf("%s: %v, %v; want %d bytes", name, fi, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "c")); err == nil {
		t.Error("c was written past the limit")
	}
}

// heapAtEOF wraps the archive and records the live heap when the tar reader reaches its end,
// that is while Extract still holds what it keeps of every entry (before finishDirs).
type heapAtEOF struct {
	r    *bytes.Reader
	heap uint64
}

func (h *heapAtEOF) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if (err == io.EOF || h.r.Len() == 0) && h.heap == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.heap = ms.HeapAlloc
	}
	return n, err
}

// TestExtractKeepsLittleOfDirectoryHeaders: Extract sets directories' modes and times at the
// end, and once kept every directory entry's whole *tar.Header until then, PAX records
// included (up to 1 MiB each, any key): a gzip layer of N directories with 1 MiB of one
// repeated byte in a PAX comment cost N MiB of RAM for ~1 KB of download each. It keeps only
// each directory's mode and times now.
func TestExtractKeepsLittleOfDirectoryHeaders(t *testing.T) {
	const n = 64
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	junk := strings.Repeat("A", 1<<20-64)
	for i := 0; i < n; i++ {
		h := &tar.Header{Name: fmt.Sprintf("d%d/", i), Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"comment": junk}}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.Close()
	tb := buf.Bytes()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc // the archive itself is counted here already
	r := &heapAtEOF{r: bytes.NewReader(tb)}
	root := filepath.Join(t.TempDir(), "root")
	if err := Extract(r, root, LayerPolicy); err != nil {
		t.Fatal(err)
	}
	t.Logf("archive %d bytes, heap at EOF %d, base %d", len(tb), r.heap, base)
	if r.heap > base && r.heap-base > 16<<20 {
		t.Fatalf("Extract held %d MiB at the archive's end for %d directories (%d MiB of PAX comments it never uses)",
			(r.heap-base)>>20, n, n)
	}
}
