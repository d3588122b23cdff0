package oci

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

func goarch() string { return runtime.GOARCH }

// Whiteouts as the OCI image spec writes them in a layer, and as overlayfs wants them in a
// lower directory: a removed path is a 0/0 character device, an opaque directory (whose lower
// contents are hidden) carries the trusted.overlay.opaque xattr.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// Unpack makes sure every layer of img is unpacked under cacheDir/layers/<diff id> and returns
// the directories, the top layer first (overlayfs' lowerdir order). A layer is unpacked into a
// temporary directory and renamed into place, so a crash leaves no half layer behind and images
// sharing a layer share its directory.
func Unpack(img v1.Image, cacheDir string) ([]string, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cacheDir, "layers")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	dirs := make([]string, len(layers))
	for i, l := range layers {
		id, err := l.DiffID()
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(base, id.Algorithm+"-"+id.Hex)
		dirs[len(layers)-1-i] = dir
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		tmp, err := os.MkdirTemp(base, ".unpack-")
		if err != nil {
			return nil, err
		}
		rc, err := l.Uncompressed()
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		err = extractLayer(tmp, rc)
		rc.Close()
		if err == nil {
			err = os.Chmod(tmp, 0o755) // MkdirTemp made it 0700; the layer's root is the image's /
		}
		if err == nil {
			if err = os.Rename(tmp, dir); err != nil && dirExists(dir) {
				err = nil // unpacked meanwhile by another instance
			}
		}
		if err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("layer %s: %w", id, err)
		}
	}
	return dirs, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// extractLayer writes one layer's tar stream under root, converting whiteouts to overlayfs'.
func extractLayer(root string, r io.Reader) error {
	tr := tar.NewReader(r)
	type dirTime struct {
		path string
		t    time.Time
	}
	var dirTimes []dirTime // set last: writing into a directory changes its mtime
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		p, err := within(root, h.Name)
		if err != nil {
			return err
		}
		if p == root {
			continue
		}
		if err := noSymlinkParents(root, p); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		base := filepath.Base(p)
		switch {
		case base == whiteoutOpaque:
			if err := unix.Setxattr(filepath.Dir(p), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
				return fmt.Errorf("opaque whiteout %s: %w", h.Name, err)
			}
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			target := filepath.Join(filepath.Dir(p), strings.TrimPrefix(base, whiteoutPrefix))
			if err := unix.Mknod(target, unix.S_IFCHR, 0); err != nil {
				return fmt.Errorf("whiteout %s: %w", h.Name, err)
			}
			continue
		}
		mode := uint32(h.Mode & 0o7777)
		switch h.Typeflag {
		case tar.TypeDir:
			if st, err := os.Lstat(p); err != nil || !st.IsDir() {
				_ = os.RemoveAll(p)
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
			}
			dirTimes = append(dirTimes, dirTime{p, h.ModTime})
		case tar.TypeReg:
			_ = os.RemoveAll(p)
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.RemoveAll(p)
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		case tar.TypeLink:
			src, err := within(root, h.Linkname)
			if err != nil {
				return err
			}
			_ = os.RemoveAll(p)
			if err := os.Link(src, p); err != nil {
				return fmt.Errorf("hard link %s -> %s: %w", h.Name, h.Linkname, err)
			}
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			kind := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[h.Typeflag]
			_ = os.RemoveAll(p)
			if err := unix.Mknod(p, kind|mode, int(unix.Mkdev(uint32(h.Devmajor), uint32(h.Devminor)))); err != nil {
				return err
			}
		default:
			continue // pax/global headers and the like carry no file
		}
		if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeSymlink && h.Typeflag != tar.TypeLink {
			// After chown: chown clears setuid/setgid bits.
			if err := unix.Chmod(p, mode); err != nil {
				return err
			}
		}
		for k, v := range h.PAXRecords { // file capabilities and the like
			if x, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok && h.Typeflag != tar.TypeSymlink {
				_ = unix.Lsetxattr(p, x, []byte(v), 0)
			}
		}
		if h.Typeflag != tar.TypeDir {
			ts := []unix.Timespec{unix.NsecToTimespec(h.ModTime.UnixNano()), unix.NsecToTimespec(h.ModTime.UnixNano())}
			_ = unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	for i := len(dirTimes) - 1; i >= 0; i-- {
		ts := []unix.Timespec{unix.NsecToTimespec(dirTimes[i].t.UnixNano()), unix.NsecToTimespec(dirTimes[i].t.UnixNano())}
		_ = unix.UtimesNanoAt(unix.AT_FDCWD, dirTimes[i].path, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// noSymlinkParents refuses an entry whose parent directories include a symlink the layer made:
// writing through it could land outside root.
func noSymlinkParents(root, p string) error {
	rel, err := filepath.Rel(root, filepath.Dir(p))
	if err != nil || rel == "." {
		return err
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("entry %s goes through the symlink %s", p[len(root):], cur[len(root):])
		}
	}
	return nil
}
