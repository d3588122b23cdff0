package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Policy says what an archive may carry and what of its headers is applied. The zero Policy
// takes directories and regular files with their permission bits and nothing else.
type Policy struct {
	Symlinks  bool // symbolic links (else refused)
	HardLinks bool // hard links to files already extracted (else refused)
	Devices   bool // character and block devices and FIFOs (else refused, or see SkipDevices)
	// SkipDevices, without Devices, leaves character and block devices (and hard links to
	// them) out instead of refusing the archive, and makes FIFOs, which open nothing of the
	// host's: a tree copied onto the host keeps its named pipes but no way into its hardware.
	SkipDevices bool
	// Whiteouts turns OCI whiteouts into overlayfs' (for a layer stacked as a lower
	// directory): ".wh.NAME" becomes a 0/0 character device NAME, ".wh..wh..opq" the
	// trusted.overlay.opaque xattr on its directory.
	Whiteouts bool
	Owners    bool // chown to the header's uid and gid (else the caller's)
	Xattrs    bool // SCHILY.xattr.* PAX records as extended attributes (security.selinux excepted)
	// SpecialBits keeps setuid and setgid bits and security.capability (else cleared). The
	// sticky bit is always kept: it only restricts (who may remove from a directory).
	SpecialBits bool
	Times       bool // set modification and access times from the header
	// ClampNames reads ".." at the root as the root and drops a leading "/" (containerd's
	// reading of a layer); else such names are refused.
	ClampNames bool
	// ReplaceDirs lets an entry that is not a directory replace a directory of the same name
	// (its tree removed, as a later layer entry does); else that is refused.
	ReplaceDirs bool
	// KeepRoot leaves the root's own owner, mode and times alone when the archive has a "."
	// directory entry: the root is the caller's (an existing destination, a host directory).
	KeepRoot bool
	// LinksInside requires every symbolic link the archive makes — a symlink entry, or a hard
	// link to a symbolic link, which is one too — once the whole archive is written, to resolve
	// inside the root as the kernel resolves it (chains of links included); a dangling link
	// must be relative and free of "..", since what it will resolve to cannot be checked.
	LinksInside bool
	// FileRoot lets a "." regular file be the whole archive: it is written at root's own path
	// (the copy of a single file).
	FileRoot bool
	// Sync makes every regular file durable before it is closed, and the root directory at
	// the end (a restored store's files).
	Sync bool
	// MaxBytes bounds the bytes of file contents the archive may write in all (0:
	// DefaultMaxBytes); an entry that would pass it is refused before it is written. Sparse
	// entries are always refused, so that no file holds more than the archive carried for
	// it: the bound is what a compressed or endless stream can cost the disk.
	MaxBytes int64
}

// DefaultMaxBytes is MaxBytes when a Policy leaves it 0: 64 GiB, above the largest image
// layers and pulled outputs in use, below what fills a node's disk unnoticed.
const DefaultMaxBytes int64 = 64 << 30

// Sparse says whether h is a sparse file (GNU's old 'S' type or a PAX GNU.sparse.* entry,
// which archive/tar reads as a regular file): Extract refuses them, since their holes would be
// written as zeros — a few kilobytes of archive for any number of bytes of disk.
func Sparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// LayerPolicy is an OCI image layer's: everything a layer may carry, whiteouts turned into
// overlayfs', names clamped at the root. Devices and setuid files are made as the image has
// them: the caller keeps the layers in a directory only root may enter (internal/app/oci's
// cache is 0700), and the container's device cgroup, not the node, decides who opens them.
var LayerPolicy = Policy{Symlinks: true, HardLinks: true, Devices: true, Whiteouts: true, Owners: true,
	Xattrs: true, SpecialBits: true, Times: true, ClampNames: true, ReplaceDirs: true, KeepRoot: true}

// Extract writes the archive r under root (made if missing, with its parents) as p allows.
// An error leaves what was extracted so far, all of it inside root (and with LinksInside,
// no link that leads out of it).
func Extract(r io.Reader, root string, p Policy) error {
	x := &extractor{p: p, rootPath: filepath.Clean(root), root: -1, dirs: map[string]dirMeta{}, skipped: map[string]bool{}}
	defer x.close()
	err := x.extract(r)
	if err != nil && x.root >= 0 {
		_ = x.checkLinks() // removes links that lead out, even from a refused archive
	}
	return err
}

func (x *extractor) extract(r io.Reader) error {
	p := x.p
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if x.fileRoot {
			return fmt.Errorf("tar entry %q after the single file the archive copies", h.Name)
		}
		if Sparse(h) {
			return fmt.Errorf("tar entry %q refused: a sparse file (its holes would be written out as zeros); archive it without --sparse", h.Name)
		}
		if err := x.budget(h); err != nil {
			return err
		}
		name, err := x.clean(h.Name)
		if err != nil {
			return err
		}
		if n == 0 && name == "." && p.FileRoot && isReg(h.Typeflag) {
			if err := x.writeFileRoot(h, tr); err != nil {
				return err
			}
			x.fileRoot = true
			continue
		}
		if err := x.open(); err != nil {
			return err
		}
		if err := x.entry(h, name, tr); err != nil {
			return err
		}
	}
	if x.root < 0 {
		return nil
	}
	if err := x.checkLinks(); err != nil {
		return err
	}
	if err := x.finishDirs(); err != nil {
		return err
	}
	if p.Sync {
		return unix.Fsync(x.root)
	}
	return nil
}

type extractor struct {
	p        Policy
	rootPath string
	root     int                // the root directory, opened once; -1 until the first entry
	fileRoot bool               // the archive was a single file written at rootPath
	dirs     map[string]dirMeta // directory entries: modes and times set at the end
	links    []string           // symbolic links made, by symlink entries or hard links to links (LinksInside checks them at the end)
	written  int64              // bytes of file contents written so far (MaxBytes)
	dirBytes int64              // memory x.dirs takes, about (maxDirBytes)
	skipped  map[string]bool    // devices left out (SkipDevices), so hard links to them are too
}

// budget counts a regular file's contents against MaxBytes before a byte of it is written
// (archive/tar gives a non-sparse entry exactly Size bytes).
func (x *extractor) budget(h *tar.Header) error {
	if !isReg(h.Typeflag) {
		return nil
	}
	max := x.p.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if h.Size > max-x.written {
		return fmt.Errorf("tar entry %q refused: the archive's files would exceed %d bytes, the most this extraction writes (archive.Policy.MaxBytes)", h.Name, max)
	}
	x.written += h.Size
	return nil
}

// dirMeta is what the final pass needs of a directory entry: its mode (as the policy allows)
// and times. Only this is kept, not the header (whose PAX records may be a megabyte each), so
// an extraction holds about its directories' names and 40 bytes each, whatever the archive.
type dirMeta struct {
	mode  uint32
	times [2]unix.Timespec
}

// maxDirBytes bounds the memory the directories' metadata take until the end: 256 MiB,
// a million directories with names of 200 bytes.
const maxDirBytes = 256 << 20

// keepDir keeps the directory entry name's metadata for the final pass.
func (x *extractor) keepDir(name string, h *tar.Header) error {
	if _, ok := x.dirs[name]; !ok {
		x.dirBytes += int64(len(name)) + 64 // the name, the meta, the map's overhead
		if x.dirBytes > maxDirBytes {
			return fmt.Errorf("tar entry %q refused: the archive has more directories than an extraction keeps (%d MiB of their names and modes)", h.Name, maxDirBytes>>20)
		}
	}
	x.dirs[name] = x.dirMeta(h)
	return nil
}

func (x *extractor) dirMeta(h *tar.Header) dirMeta {
	ts := timespecs(h)
	return dirMeta{mode: x.mode(h), times: [2]unix.Timespec{ts[0], ts[1]}}
}

func (x *extractor) close() {
	if x.root >= 0 {
		unix.Close(x.root)
	}
}

func isReg(t byte) bool { return t == tar.TypeReg || t == '\x00' }

// open makes and opens the root at the first entry (an empty archive makes nothing).
func (x *extractor) open() error {
	if x.root >= 0 {
		return nil
	}
	if err := os.MkdirAll(x.rootPath, 0o755); err != nil {
		return err
	}
	fd, err := unix.Open(x.rootPath, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", x.rootPath, err)
	}
	x.root = fd
	return nil
}

// clean turns an entry's name into a clean relative path ("." for the root).
func (x *extractor) clean(name string) (string, error) {
	if x.p.ClampNames {
		if c := path.Clean("/" + name); c != "/" {
			return c[1:], nil
		}
		return ".", nil
	}
	// A backslash is an ordinary character of a Linux name (an image may hold a\b): only
	// "/" separates, and only "/" and ".." are read here.
	if name == "" || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("tar entry %q refused: entries must be relative paths inside the destination", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("tar entry %q refused: it climbs out of the destination (\"..\")", name)
		}
	}
	return path.Clean(name), nil
}

// mode is the header's mode as p allows it.
func (x *extractor) mode(h *tar.Header) uint32 {
	m := uint32(h.Mode) & 0o7777
	if !x.p.SpecialBits {
		m &^= unix.S_ISUID | unix.S_ISGID
	}
	return m
}

// entry writes one entry (name clean, not the root unless a directory).
func (x *extractor) entry(h *tar.Header, name string, body io.Reader) error {
	if name == "." {
		if h.Typeflag != tar.TypeDir {
			return fmt.Errorf("tar entry %q: the root can only be a directory", h.Name)
		}
		if !x.p.KeepRoot {
			x.dirs["."] = x.dirMeta(h)
			if err := x.meta(x.root, "", h, false); err != nil {
				return err
			}
		}
		return nil
	}
	dir, base := path.Split(name)
	pfd, err := x.dir(strings.TrimSuffix(dir, "/"), true, h.Name)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)

	if x.p.Whiteouts && strings.HasPrefix(base, whiteoutPrefix) {
		return x.whiteout(pfd, base, h.Name)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		var st unix.Stat_t
		err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(pfd, base, 0); err != nil {
				return fmt.Errorf("tar entry %q: replace the file there: %w", h.Name, err)
			}
			err = unix.ENOENT
		}
		if errors.Is(err, unix.ENOENT) {
			if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
				return fmt.Errorf("tar entry %q: %w", h.Name, err)
			}
		} else if err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
		if err := x.keepDir(name, h); err != nil {
			return err
		}
		fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
		defer unix.Close(fd)
		return x.meta(fd, "", h, false) // mode and times at the end, once the tree is filled
	case tar.TypeReg, '\x00':
		if err := x.clear(pfd, base, h.Name); err != nil {
			return err
		}
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
		f := os.NewFile(uintptr(fd), name)
		_, err = io.Copy(f, body)
		if err == nil {
			err = x.meta(fd, "", h, true)
		}
		if err == nil && x.p.Sync {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
		return x.times(pfd, base, h)
	case tar.TypeSymlink:
		if !x.p.Symlinks {
			return notCarried(h)
		}
		if x.p.LinksInside {
			if err := linkText(name, h.Linkname); err != nil {
				return err
			}
		}
		if err := x.clear(pfd, base, h.Name); err != nil {
			return err
		}
		if err := unix.Symlinkat(h.Linkname, pfd, base); err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
		x.links = append(x.links, name)
		return x.atMeta(pfd, base, h, false)
	case tar.TypeLink:
		if !x.p.HardLinks {
			return notCarried(h)
		}
		return x.hardLink(pfd, base, name, h)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if !x.p.Devices && x.p.SkipDevices && h.Typeflag != tar.TypeFifo {
			x.skipped[name] = true
			return x.clear(pfd, base, h.Name) // what the archive had there before is gone too
		}
		if !x.p.Devices && !(x.p.SkipDevices && h.Typeflag == tar.TypeFifo) {
			return notCarried(h)
		}
		if err := x.clear(pfd, base, h.Name); err != nil {
			return err
		}
		kind := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[h.Typeflag]
		dev := int(unix.Mkdev(uint32(h.Devmajor), uint32(h.Devminor)))
		if err := unix.Mknodat(pfd, base, kind|0o600, dev); err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
		return x.atMeta(pfd, base, h, true)
	default:
		return notCarried(h)
	}
}

func notCarried(h *tar.Header) error {
	return fmt.Errorf("tar entry %q: type %q is not carried here", h.Name, h.Typeflag)
}

// hardLink links name to the file h.Linkname names, both reached without following a link.
func (x *extractor) hardLink(pfd int, base, name string, h *tar.Header) error {
	target, err := x.clean(h.Linkname)
	if err != nil {
		return fmt.Errorf("hard link %q -> %q: %w", h.Name, h.Linkname, err)
	}
	if target == "." || target == name {
		return fmt.Errorf("hard link %q -> %q refused: it links to itself or the root", h.Name, h.Linkname)
	}
	if x.skipped[target] {
		x.skipped[name] = true
		return x.clear(pfd, base, h.Name) // a second name of a device left out
	}
	tdir, tbase := path.Split(target)
	tfd, err := x.dir(strings.TrimSuffix(tdir, "/"), false, h.Linkname)
	if err != nil {
		return fmt.Errorf("hard link %q: %w", h.Name, err)
	}
	defer unix.Close(tfd)
	var st unix.Stat_t
	if err := unix.Fstatat(tfd, tbase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("hard link %q -> %q: the target is not in the archive: %w", h.Name, h.Linkname, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("hard link %q -> %q refused: the target is a directory", h.Name, h.Linkname)
	}
	if err := x.clear(pfd, base, h.Name); err != nil {
		return err
	}
	// Flags 0: a target that is a symbolic link is linked itself, not followed.
	if err := unix.Linkat(tfd, tbase, pfd, base, 0); err != nil {
		return fmt.Errorf("hard link %q -> %q: %w", h.Name, h.Linkname, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// A second name of a symbolic link is a symbolic link of its own: its text is read
		// from this name's directory, so LinksInside checks it as one the archive made.
		x.links = append(x.links, name)
	}
	return nil
}

// Whiteouts as the OCI image spec writes them in a layer.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

func (x *extractor) whiteout(pfd int, base, entry string) error {
	if base == whiteoutOpaque {
		fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Fsetxattr(fd, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
			return fmt.Errorf("opaque whiteout %s: %w", entry, err)
		}
		return nil
	}
	gone := strings.TrimPrefix(base, whiteoutPrefix)
	if gone == "" || gone == "." || gone == ".." {
		return fmt.Errorf("whiteout %q names no file", entry)
	}
	if err := x.clear(pfd, gone, entry); err != nil {
		return err
	}
	if err := unix.Mknodat(pfd, gone, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("whiteout %s: %w", entry, err)
	}
	return nil
}

// clear removes what is at base in pfd before an entry takes its place: a file or link is
// unlinked (never written through), a directory's tree removed if p allows.
func (x *extractor) clear(pfd int, base, entry string) error {
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tar entry %q: %w", entry, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(pfd, base, 0)
	}
	if !x.p.ReplaceDirs {
		return fmt.Errorf("tar entry %q refused: a directory is there and the archive has a file", entry)
	}
	return removeAt(pfd, base)
}

// removeAt removes name in dirfd and, if a directory, its tree, never following a link.
func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	fd, oerr := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, rerr := f.Readdirnames(-1)
	for _, n := range names {
		if err := removeAt(fd, n); err != nil && rerr == nil {
			rerr = err
		}
	}
	f.Close()
	if rerr != nil {
		return rerr
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// dir opens (O_PATH) the directory rel under the root ("" or "." the root itself), refusing
// any symbolic link on the way; create makes missing directories (0755).
func (x *extractor) dir(rel string, create bool, entry string) (int, error) {
	if rel == "" || rel == "." {
		return unix.Openat(x.root, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	fd, err := beneath(x.root, rel)
	if err == nil || !create || !errors.Is(err, unix.ENOENT) {
		return fd, onTheWay(entry, err)
	}
	cur, err := beneath(x.root, ".")
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		next, err := beneath(cur, c)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(cur, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = beneath(cur, c)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, onTheWay(entry, err)
		}
		cur = next
	}
	return cur, nil
}

// beneath opens the directory rel under dirfd as the kernel resolves it with no symbolic link
// at all and nothing above dirfd.
func beneath(dirfd int, rel string) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // a rename elsewhere raced the lookup: the kernel asks to try again
		}
		return fd, err
	}
}

func onTheWay(entry string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("tar entry %q refused: it would be written through the symbolic link (or non-directory) on its way; links are never followed", entry)
	}
	return fmt.Errorf("tar entry %q: %w", entry, err)
}

// meta applies owner, xattrs and (files only, when now) mode to the open fd.
func (x *extractor) meta(fd int, _ string, h *tar.Header, now bool) error {
	if x.p.Owners {
		if err := unix.Fchown(fd, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	if now { // after chown: chown clears setuid and setgid
		if err := unix.Fchmod(fd, x.mode(h)); err != nil {
			return err
		}
	}
	if x.p.Xattrs {
		for k, v := range h.PAXRecords {
			if name, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok && x.carriedXattr(name) {
				if err := unix.Fsetxattr(fd, name, []byte(v), 0); err != nil && !ignorableXattr(err) {
					return fmt.Errorf("xattr %s: %w", name, err)
				}
			}
		}
	}
	return nil
}

// carriedXattr says whether an archive may set the extended attribute: not the host's
// SELinux label, and not overlayfs' own (trusted.overlay.*: redirects, metacopy, origin,
// opaque), which only the whiteout conversion writes, so that a layer cannot steer the
// overlay built from it; and without SpecialBits no file capability (security.capability
// gives privileges on exec as a setuid bit does).
func (x *extractor) carriedXattr(name string) bool {
	if name == "security.capability" && !x.p.SpecialBits {
		return false
	}
	return name != "security.selinux" && !strings.HasPrefix(name, "trusted.overlay.")
}

func ignorableXattr(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM)
}

// atMeta applies owner, mode (when mode), xattrs and times to base in pfd, which is not opened
// (a symbolic link or a device): every call either does not follow a link or has checked the
// name is none.
func (x *extractor) atMeta(pfd int, base string, h *tar.Header, mode bool) error {
	if x.p.Owners {
		if err := unix.Fchownat(pfd, base, h.Uid, h.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
	}
	if mode {
		err := unix.Fchmodat(pfd, base, x.mode(h), unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.EOPNOTSUPP) { // no fchmodat2: base is the node just made, not a link
			var st unix.Stat_t
			if err = unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
				err = unix.Fchmodat(pfd, base, x.mode(h), 0)
			}
		}
		if err != nil {
			return fmt.Errorf("tar entry %q: %w", h.Name, err)
		}
	}
	if x.p.Xattrs && len(h.PAXRecords) > 0 {
		// The directory's descriptor through /proc, then base itself (l: not followed).
		p := fmt.Sprintf("/proc/self/fd/%d/%s", pfd, base)
		for k, v := range h.PAXRecords {
			if name, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok && x.carriedXattr(name) {
				if err := unix.Lsetxattr(p, name, []byte(v), 0); err != nil && !ignorableXattr(err) {
					return fmt.Errorf("tar entry %q: xattr %s: %w", h.Name, name, err)
				}
			}
		}
	}
	return x.times(pfd, base, h)
}

func (x *extractor) times(pfd int, base string, h *tar.Header) error {
	if !x.p.Times {
		return nil
	}
	ts := timespecs(h)
	if err := unix.UtimesNanoAt(pfd, base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("tar entry %q: times: %w", h.Name, err)
	}
	return nil
}

func timespecs(h *tar.Header) []unix.Timespec {
	at := h.AccessTime
	if at.IsZero() {
		at = h.ModTime
	}
	return []unix.Timespec{timespec(at), timespec(h.ModTime)}
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.NsecToTimespec(0)
	}
	return unix.NsecToTimespec(t.UnixNano())
}

// writeFileRoot writes a "." regular file at the root's own path.
func (x *extractor) writeFileRoot(h *tar.Header, body io.Reader) error {
	parent, base := filepath.Split(x.rootPath)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	pfd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := x.clear(pfd, base, x.rootPath); err != nil {
		return err
	}
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), x.rootPath)
	_, err = io.Copy(f, body)
	if err == nil {
		err = x.meta(fd, "", h, true)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", x.rootPath, err)
	}
	return x.times(pfd, base, h)
}

// finishDirs sets directories' modes and times, deepest first (writing into a directory
// changes its times; a read-only one could not be filled), on what is a directory at that
// name now, reached without following a link: a name the archive later made a link (or
// put under one) is skipped.
func (x *extractor) finishDirs() error {
	names := make([]string, 0, len(x.dirs))
	for n := range x.dirs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if names[i] == "." || names[j] == "." {
			return names[j] == "."
		}
		if di != dj {
			return di > dj
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		if err := x.finishDir(n, x.dirs[n]); err != nil {
			return fmt.Errorf("directory %q: %w", n, err)
		}
	}
	return nil
}

func (x *extractor) finishDir(n string, d dirMeta) error {
	if n == "." {
		if err := unix.Fchmod(x.root, d.mode); err != nil || !x.p.Times {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, x.rootPath, d.times[:], 0)
	}
	dir, base := path.Split(n)
	pfd, err := x.dir(strings.TrimSuffix(dir, "/"), false, n)
	if err != nil {
		return nil // under a link now, or gone
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT) {
		return nil // replaced by a link or a file, or removed
	}
	if err != nil {
		return err
	}
	err = unix.Fchmod(fd, d.mode)
	unix.Close(fd)
	if err != nil || !x.p.Times {
		return err
	}
	// base was a directory just now, opened without following; nothing else writes here.
	return unix.UtimesNanoAt(pfd, base, d.times[:], unix.AT_SYMLINK_NOFOLLOW)
}
