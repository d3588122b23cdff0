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

	"github.com/continuum-project/continuum/internal/archive"
	"github.com/continuum-project/continuum/internal/httpjson"
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

// extractTar writes the tree of r under dst (existing files overwritten) through the one
// extraction routine every archive takes: directories, files and symbolic links only, names
// relative and inside dst, nothing written through a link, and every link, once the tree is
// written, resolving inside dst as the kernel resolves it (chains of links included).
func extractTar(r io.Reader, dst string) error {
	if !filepath.IsAbs(dst) {
		return fmt.Errorf("destination %q is not an absolute path", dst)
	}
	return archive.Extract(r, dst, filesPolicy)
}

// filesPolicy is a push's and a pull's: modes (permission bits and the sticky bit, not setuid
// or setgid) but not owners or times; a single file may be the whole tree. The destination's
// own owner and mode stay as they are (KeepRoot): the stream's "." entry must not open a
// user's 0700 directory to the world, nor take /tmp's sticky bit away.
// (internal/archive/hostile_test.go runs its hostile tars under a copy of this policy.)
var filesPolicy = archive.Policy{Symlinks: true, LinksInside: true, FileRoot: true, KeepRoot: true}

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
	httpjson.Write(w, http.StatusOK, struct{}{})
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
