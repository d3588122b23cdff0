package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// WriteTree writes the directory tree at dir to w as a tar stream for Extract: "." is dir
// itself, then every directory, regular file, symbolic link (not followed), hard link (a
// second name of an inode already written), device and FIFO (sockets are skipped), each with
// its owner, mode (setuid, setgid and sticky bits too), times and extended attributes
// (security.selinux is the host's labelling and is left out).
func WriteTree(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	type inode struct{ dev, ino uint64 } // an inode is its number on its filesystem
	links := map[inode]string{}          // -> the name written first
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		h := &tar.Header{Name: rel, Mode: int64(st.Mode & 0o7777), Uid: int(st.Uid), Gid: int(st.Gid),
			ModTime: time.Unix(st.Mtim.Unix()), AccessTime: time.Unix(st.Atim.Unix()), Format: tar.FormatPAX}
		if x := xattrs(p); len(x) > 0 {
			h.PAXRecords = x
		}
		typ := st.Mode & unix.S_IFMT
		if typ != unix.S_IFDIR && st.Nlink > 1 {
			if first, ok := links[inode{st.Dev, st.Ino}]; ok {
				h.Typeflag, h.Linkname, h.PAXRecords = tar.TypeLink, first, nil
				return tw.WriteHeader(h)
			}
			links[inode{st.Dev, st.Ino}] = rel
		}
		var body *os.File
		switch typ {
		case unix.S_IFDIR:
			h.Typeflag = tar.TypeDir
		case unix.S_IFREG:
			h.Typeflag, h.Size = tar.TypeReg, st.Size
			if body, err = os.Open(p); err != nil {
				return err
			}
			defer body.Close()
		case unix.S_IFLNK:
			h.Typeflag = tar.TypeSymlink
			if h.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
		case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO:
			h.Typeflag = map[uint32]byte{unix.S_IFCHR: tar.TypeChar, unix.S_IFBLK: tar.TypeBlock, unix.S_IFIFO: tar.TypeFifo}[typ]
			h.Devmajor, h.Devminor = int64(unix.Major(uint64(st.Rdev))), int64(unix.Minor(uint64(st.Rdev)))
		case unix.S_IFSOCK:
			return nil
		default:
			return fmt.Errorf("%s: a file of type %o", p, typ)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if body != nil {
			if _, err := io.CopyN(tw, body, h.Size); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// xattrs reads p's extended attributes as PAX records, where the filesystem has them.
func xattrs(p string) map[string]string {
	size, err := unix.Llistxattr(p, nil)
	if err != nil || size == 0 {
		return nil
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(p, buf); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if name == "" || name == "security.selinux" {
			continue
		}
		n, err := unix.Lgetxattr(p, name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, n)
		if n, err = unix.Lgetxattr(p, name, val); err != nil && !errors.Is(err, syscall.ERANGE) {
			continue
		}
		out["SCHILY.xattr."+name] = string(val[:n])
	}
	return out
}
