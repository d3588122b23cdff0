package agent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// writeTar writes src (a file or a directory tree) as a tar stream. A file is one entry named
// "."; a directory is "." and its tree below, relative to it. Symbolic links are kept as links;
// other special files are left out.
func writeTar(w io.Writer, src string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		var link string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		case fi.Mode().IsRegular(), fi.IsDir():
		default:
			return nil // sockets, fifos, devices: nothing to copy
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", "" // ownership is the receiver's
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, h.Size)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// extractTar extracts a stream writeTar wrote into dst: "." becomes dst itself (a file or a
// directory), the rest goes below it. Existing files are replaced. Entries that would land
// outside dst (absolute names, "..", links pointing out of it) and hard links are refused.
func extractTar(r io.Reader, dst string) error {
	if !filepath.IsAbs(dst) {
		return fmt.Errorf("destination %q: want an absolute path", dst)
	}
	dst = filepath.Clean(dst)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(h.Name, "/")
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || strings.HasSuffix(name, "/..") {
			return fmt.Errorf("tar entry %q: outside the destination", h.Name)
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		if target != dst && !strings.HasPrefix(target, dst+string(filepath.Separator)) {
			return fmt.Errorf("tar entry %q: outside the destination", h.Name)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			_ = os.Remove(target) // replace, also a read-only file or a link
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", target, err)
			}
		case tar.TypeSymlink:
			to := h.Linkname
			if !filepath.IsAbs(to) {
				to = filepath.Join(filepath.Dir(target), to)
			}
			if to = filepath.Clean(to); to != dst && !strings.HasPrefix(to, dst+string(filepath.Separator)) {
				return fmt.Errorf("tar entry %q: a link to %q, outside the destination", h.Name, h.Linkname)
			}
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tar entry %q: type %q is not copied (files, directories and links only)", h.Name, string(h.Typeflag))
		}
	}
}

func pathParam(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if !filepath.IsAbs(p) {
		return "", badRequest("path %q: want an absolute path", p)
	}
	return filepath.Clean(p), nil
}

func (s *server) handlePush(w http.ResponseWriter, r *http.Request) {
	dst, err := pathParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := extractTar(r.Body, dst); err != nil {
		writeError(w, badRequest("push to %s on node %s: %v", dst, s.opts.Node, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) handlePull(w http.ResponseWriter, r *http.Request) {
	src, err := pathParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := os.Lstat(src); err != nil {
		writeError(w, notFound("pull %s on node %s: %v", src, s.opts.Node, err))
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	if err := writeTar(w, src); err != nil {
		// The status is sent: cutting the stream short makes the client's tar reader fail.
		s.log.Warn("pull", "path", src, "err", err)
		panic(http.ErrAbortHandler)
	}
}
