package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"
)

// A layer store keeps compressed layers across builds, by what they hold: the sha256 of the
// layer's uncompressed tar (its diffID, which the image config lists anyway) and the
// compressor's identity. gzip output is a function of its input, the library's version and the
// level, so a stored file is the one this build would write: a rebuild whose trees did not
// change (the venv of the Python image, the base layer, an unchanged binary) hashes its tar
// instead of compressing it, and the image's bytes are the same either way.
//
// Nothing read from the store is trusted: a hit is first linked (or copied) into the build's
// own temporary directory, so that another build's trim or a replaced file cannot change it
// under this build, then read once as a regular file (no symlink followed) to take both its
// digest and, decompressed, its diffID; a file whose content is not its key's is removed and
// the layer compressed again. Entries are written to a temporary name, synced and renamed, so
// a reader sees a whole file or none. A hit refreshes the file's time; after a build the store
// drops its least recently used files past layerStoreMax bytes.
type layerStore struct {
	dir string
}

// layerStoreMax bounds the store: the usual images share their venv and base layers, and each
// build of a new binary adds about 50 MB; a machine whose disk fills makes kubelet evict pods.
const layerStoreMax = 1 << 30

// compressorID names the gzip writer and its level in the store's keys: a new library version
// may write other bytes for the same input.
var compressorID = func() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/klauspost/compress" {
				v = d.Version
				if d.Replace != nil {
					v = d.Replace.Path + "@" + d.Replace.Version
				}
			}
		}
	}
	return "klauspost/compress/gzip@" + v + " level default"
}()

// diffID hashes the tree's uncompressed tar as WriteTar writes it.
func (t *Tree) diffID(epoch time.Time) (v1.Hash, error) {
	h := sha256.New()
	if err := t.WriteTar(h, epoch); err != nil {
		return v1.Hash{}, err
	}
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}, nil
}

// storeFormat changes when what a key promises changes (v2: keys of the diffID of the bytes
// compressed; v1's could name an earlier reading of a host file).
const storeFormat = "v2"

func (s layerStore) path(diffID v1.Hash) string {
	k := sha256.Sum256([]byte(storeFormat + "\n" + diffID.String() + "\n" + compressorID))
	return filepath.Join(s.dir, hex.EncodeToString(k[:])+".tar.gz")
}

// layer returns the tree's layer, from the store or compressed (into tmp) and stored. A store
// that cannot be written is not an error: the layer is built as without one.
func (s layerStore) layer(t *Tree, epoch time.Time, tmp string) (v1.Layer, error) {
	diffID, err := t.diffID(epoch)
	if err != nil {
		return nil, err
	}
	p := s.path(diffID)
	if l, err := s.hit(p, diffID, tmp); err == nil {
		return l, nil
	}
	// The diffID is taken again from the bytes compressed: a host file that changed since the
	// hash above makes another layer, stored under its own key, never this key's.
	written, diffID, err := t.writeGzipHashed(tmp, epoch)
	if err != nil {
		return nil, err
	}
	l, err := fileLayerOf(written, diffID)
	if err != nil {
		return nil, err
	}
	_ = s.put(written, s.path(diffID)) // a copy: the build keeps reading its own file
	return l, nil
}

// hit is the stored layer at p, checked to hold diffID, from a private link or copy in tmp.
// A file that does not hold it is removed from the store.
func (s layerStore) hit(p string, diffID v1.Hash, tmp string) (v1.Layer, error) {
	own, err := os.CreateTemp(tmp, "stored-*.tar.gz")
	if err != nil {
		return nil, err
	}
	own.Close()
	os.Remove(own.Name())
	if err := os.Link(p, own.Name()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err := copyRegular(p, own.Name()); err != nil {
			return nil, err
		}
	}
	l, err := fileLayerOf(own.Name(), v1.Hash{})
	if err == nil && l.diffID != diffID {
		err = fmt.Errorf("layer store: %s holds %v, not %v", p, l.diffID, diffID)
	}
	if err != nil {
		os.Remove(own.Name())
		os.Remove(p)
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return l, nil
}

// put copies the compressed file src into the store as dst: written to a temporary name,
// synced, renamed.
func (s layerStore) put(src, dst string) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	out, err := os.CreateTemp(s.dir, ".put-*")
	if err != nil {
		return err
	}
	out.Close()
	if err := copyRegular(src, out.Name()); err != nil {
		os.Remove(out.Name())
		return err
	}
	if err := os.Rename(out.Name(), dst); err != nil {
		os.Remove(out.Name())
		return err
	}
	return nil
}

// copyRegular copies the regular file src (not through a symlink) over dst, and syncs it.
func copyRegular(src, dst string) error {
	in, err := openRegular(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// openRegular opens path for reading if it is a regular file, following no symlink at its end
// (a FIFO or a device would hang or feed a build).
func openRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}

// trim removes the least recently used layers past max bytes, and temporary files of builds
// that died (older than a day). It goes on past a file it cannot remove (say, one a root build
// left in a user's store), and touches nothing but its own names.
func (s layerStore) trim(max int64) error {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var errs []error
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(s.dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), ".put-"):
			if time.Since(fi.ModTime()) > 24*time.Hour {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		case strings.HasSuffix(e.Name(), ".tar.gz"):
			files = append(files, file{p, fi.Size(), fi.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.After(files[j].used) })
	var total int64
	for _, f := range files {
		total += f.size
		if total > max {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// fileLayer is a gzip-compressed layer in a file of the build's own (no other process
// writes or removes it while the build runs), with its digest and diffID taken when made.
type fileLayer struct {
	path           string
	digest, diffID v1.Hash
	size           int64
}

// fileLayerOf reads the compressed file at path once: its digest, and (unless diffID is given,
// as when the bytes were hashed while compressing) the diffID of its content.
func fileLayerOf(path string, diffID v1.Hash) (*fileLayer, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	r := io.TeeReader(f, h)
	if diffID == (v1.Hash{}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", path, err)
		}
		u := sha256.New()
		if _, err := io.Copy(u, zr); err != nil {
			return nil, fmt.Errorf("layer %s: %w", path, err)
		}
		diffID = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(u.Sum(nil))}
	}
	if _, err := io.Copy(io.Discard, r); err != nil { // the rest, past gzip's end, for the digest
		return nil, fmt.Errorf("layer %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &fileLayer{path: path, diffID: diffID, size: fi.Size(),
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}}, nil
}

func (l *fileLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)             { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return types.OCILayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return gunzipFile(l.path) }

// gunzipFile opens the gzip-compressed file at path for reading its content.
func gunzipFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("layer %s: %w", path, err)
	}
	return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
