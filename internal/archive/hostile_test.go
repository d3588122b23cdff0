package archive

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive/archivetest"
)

// The hostile-tar harness: a program of bytes builds a tar (links, chains of links, hard
// links to links, whiteouts, devices, setuid bits, file capabilities, xattrs, big PAX
// records, sparse files, long names, absolute names, "..", duplicate entries, directories
// replaced by links); it is extracted under every policy the project uses into a root beside
// a decoy directory, and nothing outside the root may change: the decoy's and the parent's
// entries, contents, modes, owners, link counts, times (ctime too: any chown, chmod, xattr or
// link changes it) and xattrs are compared before and after. Inside the root, what the policy
// refuses must not be there (checkInside): no more bytes in files than the archive has, no
// setuid, setgid or file capability without SpecialBits, no device without Devices, the root's
// own mode and owner as they were with KeepRoot, every link inside with LinksInside; and the
// memory Extract holds at the archive's end is bounded whatever its PAX records.

// policies are the project's: a layer, a layout tar, a copy-up (internal/app/oci's
// copyUpPolicy), a push or pull (agent's filesPolicy), and links checked with hard links
// allowed (no caller's yet: LinksInside must hold for a hard link to a link too).
var policies = map[string]Policy{
	"layer":  LayerPolicy,
	"layout": {KeepRoot: true},
	"copyup": {Symlinks: true, HardLinks: true, SkipDevices: true, Owners: true, Xattrs: true, Times: true, KeepRoot: true},
	"files":  {Symlinks: true, LinksInside: true, FileRoot: true, KeepRoot: true},
	"inside": {Symlinks: true, HardLinks: true, LinksInside: true, Xattrs: true},
}

// names and targets an op picks from; decoyAbs is replaced by the decoy's absolute path.
const decoyAbs = "@DECOY@"

var vocab = []string{
	"a", "a/b", "a/up", "a/up/x", "esc", "esc/x", "evil", "evil/secret", "evil/sub", "evil/sub/f",
	"d", "d/sub", "d/sub/f", "stolen", "x", "..", "../decoy", "../decoy/secret", "../..", "/",
	"/abs", "./a//b/", "a/../..", ".wh.a", ".wh.evil", "a/.wh..wh..opq", "evil/.wh..wh..opq",
	".wh...", "evil/.wh.secret", "../decoy/.wh.secret", decoyAbs, decoyAbs + "/secret",
	decoyAbs + "/sub", "a/up/..", "a/up/../decoy", "a/up/missing/../..", "l", "l/x", ".",
	strings.Repeat("n", 300), strings.Repeat("deep/", 120) + "f", "/proc/self/root" + decoyAbs,
	"/proc/self/fd/3", "evil/sub/..",
}

// fileCap is a security.capability value (VFS_CAP_REVISION_2, effective): CAP_NET_RAW.
var fileCap = string([]byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})

// bigPAX is a PAX record as big as archive/tar reads (1 MiB a header's records).
var bigPAX = strings.Repeat("A", 1<<20-64)

// sparseSize is a sparse entry's size: its holes, written as zeros, would pass any archive.
const sparseSize = 64 << 20

// build turns a program into a tar: 4 bytes an entry (type, name, link target, flags). Flags:
// 1 setuid and setgid, 2 an owner, 4 xattrs, 8 mode 0777, 16 a directory's trailing "/", 32 a
// 1 MiB PAX record on a directory, 64 a regular file written sparse (PAX 1.0, or GNU's old
// format with 2), 128 a file capability.
func build(prog []byte, decoy string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	word := func(b byte) string { return strings.ReplaceAll(vocab[int(b)%len(vocab)], decoyAbs, decoy) }
	types := []byte{tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeBlock, tar.TypeFifo, tar.TypeReg}
	for i := 0; i+4 <= len(prog) && i < 4*40; i += 4 {
		h := &tar.Header{Typeflag: types[int(prog[i])%len(types)], Name: word(prog[i+1]), Linkname: word(prog[i+2]),
			Mode: 0o644, ModTime: time.Unix(1e9, 0), Format: tar.FormatPAX}
		f := prog[i+3]
		if f&1 != 0 {
			h.Mode |= 0o6000 // setuid, setgid
		}
		if f&2 != 0 {
			h.Uid, h.Gid = 4242, 4242
		}
		if f&4 != 0 {
			h.PAXRecords = map[string]string{"SCHILY.xattr.trusted.pwned": "y", "SCHILY.xattr.user.pwned": "y"}
		}
		if f&8 != 0 {
			h.Mode = 0o777
		}
		if h.Typeflag == tar.TypeDir && f&16 != 0 {
			h.Name += "/"
		}
		if h.Typeflag == tar.TypeDir && f&32 != 0 {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["comment"] = bigPAX
		}
		if f&128 != 0 {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr.security.capability"] = fileCap
		}
		if h.Typeflag == tar.TypeReg && f&64 != 0 {
			_ = tw.Flush() // archive/tar cannot write a sparse entry: its blocks, raw
			if f&2 != 0 {
				buf.Write(gnuSparseEntry(h.Name, sparseSize))
			} else {
				buf.Write(archivetest.PAXSparseEntry(h.Name, sparseSize))
			}
			continue
		}
		if h.Typeflag == tar.TypeChar || h.Typeflag == tar.TypeBlock {
			h.Devmajor, h.Devminor = 1, 3 // /dev/null
		}
		var body []byte
		if h.Typeflag == tar.TypeReg {
			body = []byte("pwned")
			h.Size = int64(len(body))
		}
		if tw.WriteHeader(h) != nil {
			continue
		}
		_, _ = tw.Write(body)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// snapshot describes every entry under dir (dir included) without following links or
// touching access times.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(p, rel string)
	walk = func(p, rel string) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			out[rel] = "lstat: " + err.Error()
			return
		}
		desc := fmt.Sprintf("mode %o uid %d gid %d nlink %d ino %d rdev %d mtime %d atime %d ctime %d size %d",
			st.Mode, st.Uid, st.Gid, st.Nlink, st.Ino, st.Rdev, st.Mtim.Nano(), st.Atim.Nano(), st.Ctim.Nano(), st.Size)
		if n, err := unix.Llistxattr(p, make([]byte, 4096)); err == nil && n > 0 {
			b := make([]byte, n)
			n, _ = unix.Llistxattr(p, b)
			names := strings.Split(strings.TrimRight(string(b[:n]), "\x00"), "\x00")
			sort.Strings(names)
			desc += " xattrs " + strings.Join(names, ",")
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case unix.S_IFREG:
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOATIME|unix.O_NOFOLLOW, 0)
			if err == nil {
				f := os.NewFile(uintptr(fd), p)
				b, _ := io.ReadAll(f)
				f.Close()
				desc += " data " + string(b)
			}
		case unix.S_IFDIR:
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOATIME|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err == nil {
				f := os.NewFile(uintptr(fd), p)
				names, _ := f.Readdirnames(-1)
				f.Close()
				for _, n := range names {
					if rel == "." && n == "root" {
						continue // the extraction's own
					}
					walk(filepath.Join(p, n), filepath.Join(rel, n))
				}
			}
		}
		out[rel] = desc
	}
	walk(dir, ".")
	return out
}

// arena is a parent with the extraction root and a decoy beside it.
func arena(t testing.TB) (parent, root, decoy string) {
	t.Helper()
	parent = t.TempDir()
	root, decoy = filepath.Join(parent, "root"), filepath.Join(parent, "decoy")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(root, 0o755))
	must(os.MkdirAll(filepath.Join(decoy, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(decoy, "secret"), []byte("secret"), 0o600))
	must(os.WriteFile(filepath.Join(decoy, "sub", "f"), []byte("f"), 0o644))
	must(os.Symlink("secret", filepath.Join(decoy, "link")))
	_ = unix.Setxattr(filepath.Join(decoy, "secret"), "user.mine", []byte("1"), 0)
	// Times apart from now, so that a change shows; atime after mtime, so that relatime
	// would not touch it on a read either.
	old := []unix.Timespec{unix.NsecToTimespec(2e18), unix.NsecToTimespec(1e18)}
	for _, p := range []string{"sub/f", "secret", "link", "sub", "."} {
		must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(decoy, p), old, unix.AT_SYMLINK_NOFOLLOW))
	}
	return parent, root, decoy
}

// checkHostile extracts the program's tar under every policy and fails if anything outside
// the root changed, or inside it anything the policy refuses is there.
func checkHostile(t *testing.T, prog []byte) {
	for name, p := range policies {
		parent, root, decoy := arena(t)
		tarball := build(prog, decoy)
		var rootBefore unix.Stat_t
		if err := unix.Lstat(root, &rootBefore); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, parent)
		r := &heapAtEOF{r: bytes.NewReader(tarball)}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		err := Extract(r, root, p)
		after := snapshot(t, parent)
		for k, v := range before {
			if after[k] != v {
				t.Errorf("policy %s: %s changed outside the root (extract: %v)\n before %s\n after  %s\n program %v", name, k, err, v, after[k], prog)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("policy %s: %s appeared outside the root (extract: %v); program %v", name, k, err, prog)
			}
		}
		// The archive itself is in base; what Extract keeps of its entries is not. Checked
		// when the reader got to the end (an archive refused earlier was not read whole).
		if r.heap > base && r.heap-base > 8<<20 {
			t.Errorf("policy %s: Extract held %d MiB at the archive's end (extract: %v); program %v", name, (r.heap-base)>>20, err, prog)
		}
		checkInside(t, name, p, root, &rootBefore, int64(len(tarball)), err, prog)
	}
}

// checkInside fails if the root holds what p refuses (see the harness's comment at the top).
func checkInside(t *testing.T, name string, p Policy, root string, rootBefore *unix.Stat_t, archive int64, err error, prog []byte) {
	t.Helper()
	var rootAfter unix.Stat_t
	if serr := unix.Lstat(root, &rootAfter); serr != nil {
		t.Fatal(serr)
	}
	if p.KeepRoot && (rootAfter.Mode != rootBefore.Mode || rootAfter.Uid != rootBefore.Uid || rootAfter.Gid != rootBefore.Gid) {
		t.Errorf("policy %s: the root's mode and owner went from %o %d:%d to %o %d:%d with KeepRoot (extract: %v); program %v",
			name, rootBefore.Mode, rootBefore.Uid, rootBefore.Gid, rootAfter.Mode, rootAfter.Uid, rootAfter.Gid, err, prog)
	}
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var bytesIn int64
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, werr error) error {
		if werr != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil {
			return nil
		}
		if d.IsDir() {
			_ = os.Chmod(path, 0o755) // so that t.TempDir can remove it
		}
		typ := st.Mode & unix.S_IFMT
		if typ == unix.S_IFREG && !seen[inode{st.Dev, st.Ino}] {
			seen[inode{st.Dev, st.Ino}] = true
			bytesIn += st.Size
		}
		if !p.SpecialBits && path != root {
			if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
				t.Errorf("policy %s: %s has mode %o: setuid or setgid without SpecialBits (extract: %v); program %v", name, path, st.Mode, err, prog)
			}
			if _, xerr := unix.Lgetxattr(path, "security.capability", make([]byte, 64)); xerr == nil {
				t.Errorf("policy %s: %s has a file capability without SpecialBits (extract: %v); program %v", name, path, err, prog)
			}
		}
		whiteout := p.Whiteouts && typ == unix.S_IFCHR && st.Rdev == 0
		if (typ == unix.S_IFCHR || typ == unix.S_IFBLK) && !p.Devices && !whiteout {
			t.Errorf("policy %s: %s is a device without Devices (extract: %v); program %v", name, path, err, prog)
		}
		if typ == unix.S_IFIFO && !p.Devices && !p.SkipDevices {
			t.Errorf("policy %s: %s is a FIFO without Devices (extract: %v); program %v", name, path, err, prog)
		}
		// With LinksInside, a link the extraction left resolves inside the root.
		if typ == unix.S_IFLNK && p.LinksInside {
			if real, rerr := filepath.EvalSymlinks(path); rerr == nil && real != root && !strings.HasPrefix(real, root+"/") {
				t.Errorf("policy %s: the link %s resolves to %s, outside the root (extract: %v); program %v", name, path, real, err, prog)
			}
		}
		return nil
	})
	if bytesIn > archive {
		t.Errorf("policy %s: the root's files hold %d bytes, more than the %d-byte archive (extract: %v); program %v", name, bytesIn, archive, err, prog)
	}
}

// op is one entry of a program.
func op(typ byte, name, target string, flags byte) []byte {
	idx := func(w string) byte {
		for i, v := range vocab {
			if v == w {
				return byte(i)
			}
		}
		panic("not in vocab: " + w)
	}
	ti := map[byte]byte{tar.TypeDir: 0, tar.TypeReg: 1, tar.TypeSymlink: 2, tar.TypeLink: 3, tar.TypeChar: 4, tar.TypeBlock: 5, tar.TypeFifo: 6}[typ]
	return []byte{ti, idx(name), idx(target), flags}
}

func prog(ops ...[]byte) []byte { return bytes.Join(ops, nil) }

// seeds are the known attacks, each a program; FuzzExtract starts from them and
// TestExtractHostileSeeds runs them in every `go test`.
var seeds = map[string][]byte{
	"hard link through a symlink (defect 10)": prog(
		op(tar.TypeSymlink, "evil", decoyAbs, 0), op(tar.TypeLink, "stolen", "evil/secret", 2|4|1)),
	"hard link through a relative symlink": prog(
		op(tar.TypeSymlink, "evil", "../decoy", 0), op(tar.TypeLink, "stolen", "evil/secret", 2|4)),
	"dir times through a symlink (defect 11)": prog(
		op(tar.TypeDir, "d", "x", 16), op(tar.TypeDir, "d/sub", "x", 16), op(tar.TypeSymlink, "d", decoyAbs, 0)),
	"dir replaced by a symlink, then written": prog(
		op(tar.TypeDir, "evil", "x", 16), op(tar.TypeSymlink, "evil", decoyAbs, 0), op(tar.TypeReg, "evil/sub/f", "x", 2|4|1)),
	"chain of links (defect 12)": prog(
		op(tar.TypeDir, "a", "x", 0), op(tar.TypeSymlink, "a/up", "..", 0), op(tar.TypeSymlink, "esc", "a/up/..", 0),
		op(tar.TypeReg, "esc/x", "x", 0)),
	"chain of links, reversed": prog(
		op(tar.TypeSymlink, "esc", "a/up/..", 0), op(tar.TypeDir, "a", "x", 0), op(tar.TypeSymlink, "a/up", "..", 0)),
	"hard link to a link": prog(
		op(tar.TypeSymlink, "l", decoyAbs+"/secret", 0), op(tar.TypeLink, "stolen", "l", 2|4|1)),
	"duplicate entries": prog(
		op(tar.TypeReg, "x", "x", 0), op(tar.TypeSymlink, "x", decoyAbs+"/secret", 0), op(tar.TypeReg, "x", "x", 2|4|1)),
	"whiteout through a link": prog(
		op(tar.TypeSymlink, "evil", decoyAbs, 0), op(tar.TypeReg, "evil/.wh.secret", "x", 0),
		op(tar.TypeReg, "evil/.wh..wh..opq", "x", 0)),
	"whiteout above the root": prog(op(tar.TypeReg, "../decoy/.wh.secret", "x", 0), op(tar.TypeReg, ".wh...", "x", 0)),
	"devices and setuid": prog(
		op(tar.TypeChar, "x", "x", 1|2|4), op(tar.TypeBlock, "a", "x", 1), op(tar.TypeFifo, "stolen", "x", 1),
		op(tar.TypeSymlink, "l", decoyAbs+"/secret", 0), op(tar.TypeChar, "l", "x", 1|2|4)),
	"absolute and climbing names": prog(
		op(tar.TypeReg, "/abs", "x", 0), op(tar.TypeReg, "../decoy/secret", "x", 2|4), op(tar.TypeDir, "../..", "x", 1|2|4),
		op(tar.TypeReg, "a/../..", "x", 0), op(tar.TypeDir, ".", "x", 2|4|8), op(tar.TypeReg, decoyAbs+"/secret", "x", 2)),
	"long names": prog(
		op(tar.TypeReg, strings.Repeat("n", 300), "x", 0), op(tar.TypeReg, strings.Repeat("deep/", 120)+"f", "x", 0)),
	"links through /proc": prog(
		op(tar.TypeSymlink, "evil", "/proc/self/root"+decoyAbs, 0), op(tar.TypeLink, "stolen", "evil/secret", 2),
		op(tar.TypeSymlink, "l", "/proc/self/fd/3", 0), op(tar.TypeReg, "l/x", "x", 0)),
	"hard link to a link, LinksInside": prog(
		op(tar.TypeDir, "a", "x", 0), op(tar.TypeSymlink, "a/up", "../decoy", 0), op(tar.TypeLink, "stolen", "a/up", 0)),
	"sparse files": prog(
		op(tar.TypeReg, "x", "x", 64), op(tar.TypeReg, "a", "x", 64|2), op(tar.TypeReg, "../decoy/secret", "x", 64)),
	"big PAX records on directories": prog(
		op(tar.TypeDir, "a", "x", 32), op(tar.TypeDir, "a/b", "x", 32), op(tar.TypeDir, "esc", "x", 32),
		op(tar.TypeDir, "evil", "x", 32), op(tar.TypeDir, "evil/sub", "x", 32), op(tar.TypeDir, "d", "x", 32),
		op(tar.TypeDir, "d/sub", "x", 32), op(tar.TypeDir, "x", "x", 32), op(tar.TypeDir, "stolen", "x", 32),
		op(tar.TypeDir, "l", "x", 32), op(tar.TypeDir, strings.Repeat("n", 300), "x", 32), op(tar.TypeDir, "a/up", "x", 32)),
	"devices, setuid and capabilities (copy-up)": prog(
		op(tar.TypeDir, ".", "x", 8|2|1), op(tar.TypeBlock, "a", "x", 8), op(tar.TypeLink, "stolen", "a", 0),
		op(tar.TypeReg, "x", "x", 1|128), op(tar.TypeDir, "d", "x", 1|128), op(tar.TypeFifo, "l", "x", 1)),
	"symlink metadata lands on the link": prog(
		op(tar.TypeSymlink, "evil", decoyAbs+"/secret", 1|2|4|8), op(tar.TypeDir, "evil/sub", "x", 1|2|4)),
}

// TestExtractHostileSeeds runs every known attack under every policy.
func TestExtractHostileSeeds(t *testing.T) {
	for what, p := range seeds {
		t.Run(what, func(t *testing.T) { checkHostile(t, p) })
	}
}

// TestExtractHostileRandom: a fixed budget of programs from a fixed seed, so that every run
// of the tests explores the same few hundred hostile tars beyond the seeds.
func TestExtractHostileRandom(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	rng := rand.New(rand.NewSource(41))
	for i := 0; i < n; i++ {
		p := make([]byte, 4*(1+rng.Intn(12)))
		rng.Read(p)
		checkHostile(t, p)
		if t.Failed() {
			return
		}
	}
}

// FuzzExtract: go test -fuzz=FuzzExtract ./internal/archive/ explores further.
func FuzzExtract(f *testing.F) {
	for _, p := range seeds {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) { checkHostile(t, p) })
}

// TestExtractPolicies: what each policy keeps, clears and refuses.
func TestExtractPolicies(t *testing.T) {
	tarOf := func(hdrs ...*tar.Header) []byte { return archivetest.Headers(t, hdrs...) }
	files := policies["files"]
	for _, tc := range []struct {
		what string
		p    Policy
		hdrs []*tar.Header
		err  string // "" for none
	}{
		{"dangling link without ..", files, []*tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "later/f"}}, ""},
		{"dangling link with ..", files, []*tar.Header{{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../missing"}}, "cannot be checked"},
		{"link inside", files, []*tar.Header{{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../a"}}, ""},
		{"device in a pull", files, []*tar.Header{{Name: "d", Typeflag: tar.TypeChar}}, "not carried"},
		{"hard link in a pull", files, []*tar.Header{{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644}, {Name: "g", Typeflag: tar.TypeLink, Linkname: "f"}}, "not carried"},
		{"symlink in a layout", policies["layout"], []*tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "x"}}, "not carried"},
		{"file over a directory in a pull", files, []*tar.Header{{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "a", Typeflag: tar.TypeReg}}, "a directory is there"},
		{"hard link to itself", LayerPolicy, []*tar.Header{{Name: "f", Typeflag: tar.TypeLink, Linkname: "f"}}, "itself"},
		{"hard link to a missing file", LayerPolicy, []*tar.Header{{Name: "f", Typeflag: tar.TypeLink, Linkname: "nope"}}, "not in the archive"},
		{"whiteout of ..", LayerPolicy, []*tar.Header{{Name: ".wh...", Typeflag: tar.TypeReg}}, "names no file"},
		{"a backslash is a name's character", files, []*tar.Header{{Name: `a\b`, Typeflag: tar.TypeReg, Mode: 0o644}, {Name: `c\..\..`, Typeflag: tar.TypeReg, Mode: 0o644}}, ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			err := Extract(bytes.NewReader(tarOf(tc.hdrs...)), root, tc.p)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("extract = %v; want %q", err, tc.err)
			}
		})
	}

	// Setuid: kept in a layer, cleared in a pull; a single file as the whole archive.
	for _, tc := range []struct {
		p    Policy
		want uint32
	}{{LayerPolicy, 0o4755}, {files, 0o755}} {
		root := filepath.Join(t.TempDir(), "root")
		if err := Extract(bytes.NewReader(tarOf(&tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o4755})), root, tc.p); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(root, "f"), &st); err != nil || st.Mode&0o7777 != tc.want {
			t.Errorf("mode %o (%v); want %o", st.Mode&0o7777, err, tc.want)
		}
	}
	// A layer cannot set overlayfs' own attributes (a redirect would steer the overlay).
	if os.Geteuid() == 0 {
		root := filepath.Join(t.TempDir(), "root")
		h := &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"SCHILY.xattr.trusted.overlay.redirect": "/etc", "SCHILY.xattr.trusted.kept": "y"}}
		if err := Extract(bytes.NewReader(tarOf(h)), root, LayerPolicy); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Lgetxattr(filepath.Join(root, "d"), "trusted.overlay.redirect", make([]byte, 64)); err == nil {
			t.Error("the layer set trusted.overlay.redirect")
		}
		if _, err := unix.Lgetxattr(filepath.Join(root, "d"), "trusted.kept", make([]byte, 64)); err != nil {
			t.Errorf("trusted.kept: %v; want other xattrs kept", err)
		}
	}
	one := filepath.Join(t.TempDir(), "new", "one")
	if err := Extract(bytes.NewReader(tarOf(&tar.Header{Name: ".", Typeflag: tar.TypeReg, Mode: 0o640})), one, files); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(one); err != nil || string(b) != "x" {
		t.Errorf("single file: %q, %v", b, err)
	}
}
