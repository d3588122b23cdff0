package oci

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyUp fills an empty volume directory (on the host) with what the image has at dest, as
// Docker does the first time a new named volume is mounted over a path with content: files,
// directories, symlinks, hard links, device nodes and FIFOs, with their owners, modes (setuid
// and sticky bits too), times and extended attributes; the volume's root takes the image
// directory's owner and mode. A volume with anything in it, or a dest the image lacks or that
// is not a directory there, is left as it is. rootfs is the image's mounted filesystem; dest
// is resolved inside it (its symlinks cannot lead out of it).
func copyUp(rootfs, dest, volume string) error {
	entries, err := os.ReadDir(volume)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return nil // not new: Docker copies into an empty volume only
	}
	src, err := resolveIn(rootfs, dest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := os.Lstat(src)
	if err != nil || !st.IsDir() {
		return nil
	}
	c := copier{links: map[uint64]string{}}
	if err := c.tree(src, volume); err != nil {
		return fmt.Errorf("copy the image's %s into the volume %s: %w", dest, volume, err)
	}
	return nil
}

// maxLinks bounds the symlinks followed while resolving one path (as the kernel's 40).
const maxLinks = 40

// resolveIn is path inside root with every symlink on the way resolved as if root were / (an
// absolute link starts again at root, ".." stops at root), so the result is always in root.
func resolveIn(root, path string) (string, error) {
	rest := strings.Split(filepath.Clean("/"+path), "/")
	var done []string // resolved components below root
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		p := filepath.Join(append([]string{root}, append(done, c)...)...)
		st, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = nil
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(append([]string{root}, done...)...), nil
}

// copier copies a tree, keeping hard links as links (by the source's inode).
type copier struct {
	links map[uint64]string // source inode -> the copy made of it
}

// tree copies the directory src's content into dst (which exists) and gives dst src's owner,
// mode, extended attributes and times. Times are set last: writing into a directory changes them.
func (c *copier) tree(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		st, err := os.Lstat(s)
		if err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		if !st.IsDir() && sys.Nlink > 1 {
			if first, ok := c.links[sys.Ino]; ok {
				if err := os.Link(first, d); err != nil {
					return err
				}
				continue
			}
			c.links[sys.Ino] = d
		}
		switch m := st.Mode(); {
		case m.IsDir():
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			if err := c.tree(s, d); err != nil {
				return err
			}
			continue // tree set its attributes
		case m.IsRegular():
			if err := copyFile(s, d); err != nil {
				return err
			}
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(s)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, d); err != nil {
				return err
			}
		case m&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0:
			if err := unix.Mknod(d, sys.Mode, int(sys.Rdev)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: a file of type %v", s, m.Type())
		}
		if err := attributes(s, d, sys); err != nil {
			return err
		}
	}
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	return attributes(src, dst, st.Sys().(*syscall.Stat_t))
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// attributes gives dst src's owner, extended attributes, mode and times (in that order:
// chown clears setuid bits, and a mode set before would be lost).
func attributes(src, dst string, st *syscall.Stat_t) error {
	if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := copyXattrs(src, dst); err != nil {
		return err
	}
	isLink := st.Mode&syscall.S_IFMT == syscall.S_IFLNK
	if !isLink {
		if err := unix.Fchmodat(unix.AT_FDCWD, dst, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(st.Mtim.Nano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// copyXattrs copies extended attributes (file capabilities among them) where the filesystems
// have them; security.selinux is the host's labelling, not the image's.
func copyXattrs(src, dst string) error {
	size, err := unix.Llistxattr(src, nil)
	if err != nil || size == 0 {
		return nil // none, or not supported here
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(src, buf); err != nil {
		return nil
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if name == "" || name == "security.selinux" {
			continue
		}
		n, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, n)
		if n, err = unix.Lgetxattr(src, name, val); err != nil {
			continue
		}
		if err := unix.Lsetxattr(dst, name, val[:n], 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("%s: xattr %s: %w", dst, name, err)
		}
	}
	return nil
}
