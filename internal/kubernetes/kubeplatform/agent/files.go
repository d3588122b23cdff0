package agent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The tar streams of Push and Pull name entries relative to the tree's root: "." is the root
// itself (a regular file when a single file is copied, else a directory), "a/b" an entry under
// it. Only directories, regular files and symbolic links are carried.

// writeTar writes the tree at root (a file or a directory) to w.
func writeTar(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets, devices, pipes: nothing to copy
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, hdr.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// extractTar writes the tree of r under dst (existing files overwritten). It refuses entries
// whose name is absolute or climbs out of dst, and symbolic links that point out of dst.
func extractTar(r io.Reader, dst string) error {
	if !filepath.IsAbs(dst) {
		return fmt.Errorf("destination %q is not an absolute path", dst)
	}
	dst = filepath.Clean(dst)
	tr := tar.NewReader(r)
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	// Directory modes are set last, deepest first, so that a read-only directory can still be
	// filled.
	var dirs []dirMode
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		mode := fs.FileMode(hdr.Mode).Perm()
		if err := noLinkOnTheWay(dst, name); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if st, err := os.Lstat(target); err == nil && !st.IsDir() {
				if err := os.Remove(target); err != nil {
					return err
				}
			}
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, mode})
		case tar.TypeReg:
			// Removing first, rather than truncating, never writes through a symbolic link
			// that was there before.
			if err := removeNonDir(target); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(target, mode)
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", target, err)
			}
		case tar.TypeSymlink:
			if name == "." {
				return fmt.Errorf("tar entry %q: the root cannot be a symbolic link", hdr.Name)
			}
			if err := linkInside(name, hdr.Linkname); err != nil {
				return err
			}
			if err := removeNonDir(target); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tar entry %q: type %q is not carried (only directories, files and symbolic links)", hdr.Name, hdr.Typeflag)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return err
		}
	}
	return nil
}

func removeNonDir(p string) error {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory; the copy has a file there", p)
	}
	return os.Remove(p)
}

// entryName cleans a tar entry's name and refuses one that would land outside the destination.
func entryName(n string) (string, error) {
	if n == "" || strings.HasPrefix(n, "/") || strings.Contains(n, "\\") {
		return "", fmt.Errorf("tar entry %q refused: entries must be relative paths inside the destination", n)
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("tar entry %q refused: it climbs out of the destination (\"..\")", n)
		}
	}
	return path.Clean(n), nil
}

// noLinkOnTheWay refuses an entry whose parent directories under dst include a symbolic link:
// writing through one could land anywhere the link (or one it was swapped for) points.
func noLinkOnTheWay(dst, name string) error {
	parts := strings.Split(name, "/")
	p := dst
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("tar entry %q refused: it would be written through the symbolic link %s", name, p)
		}
	}
	return nil
}

// linkInside refuses a symbolic link at name whose target is absolute or resolves (lexically,
// from the link's directory) outside the destination.
func linkInside(name, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("symbolic link %q -> %q refused: links must be relative and stay inside the destination", name, target)
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("symbolic link %q -> %q refused: it points out of the destination", name, target)
	}
	return nil
}

// podPath reads the absolute path a files request names.
func podPath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if !filepath.IsAbs(p) {
		return "", errorf(errBad, "invalid path %q: use an absolute path in the pod", p)
	}
	return filepath.Clean(p), nil
}

func (s *server) handlePush(w http.ResponseWriter, r *http.Request) {
	dst, err := podPath(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := extractTar(r.Body, dst); err != nil {
		writeError(w, errorf(errBad, "push to %s: %v", dst, err))
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *server) handlePull(w http.ResponseWriter, r *http.Request) {
	src, err := podPath(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := os.Lstat(src); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			writeError(w, errorf(errNotFound, "pull %s: no such file or directory in the pod", src))
		} else {
			writeError(w, err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	if err := writeTar(w, src); err != nil {
		s.opts.Logger.Warn("pull failed", "path", src, "err", err)
		panic(http.ErrAbortHandler) // the client sees a cut stream, not a short tree
	}
}
