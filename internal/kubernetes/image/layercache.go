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
)

// A layer store keeps compressed layers across builds, by what they hold: the sha256 of the
// layer's uncompressed tar (its diffID, which the image config lists anyway) and the
// compressor's identity. gzip output is a function of its input, the library's version and the
// level, so a stored file is the one this build would write: a rebuild whose trees did not
// change (the venv of the Python image, the base layer, an unchanged binary) hashes its tar
// instead of compressing it (the three usual images: 26 s to 8.7 s here), and the image's
// bytes are the same either way.
//
// Entries are files named <key>.tar.gz, written to a temporary name and renamed, so a reader
// sees a whole file or none, and two builds that write the same key write the same bytes. A hit
// refreshes the file's time; after a build the store drops its least recently used files past
// layerStoreMax bytes.
type layerStore struct {
	dir string
}

// layerStoreMax bounds the store: about ten builds of the three usual images.
const layerStoreMax = 2 << 30

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

func (s layerStore) path(diffID v1.Hash) string {
	k := sha256.Sum256([]byte(diffID.String() + "\n" + compressorID))
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
	if l, err := storedLayer(p, diffID); err == nil {
		now := time.Now()
		_ = os.Chtimes(p, now, now)
		return l, nil
	}
	// The diffID is taken again from the bytes compressed: a host file that changed since the
	// hash above makes another layer, stored under its own key, never this key's.
	written, diffID, err := t.writeGzipHashed(tmp, epoch)
	if err != nil {
		return nil, err
	}
	if p = s.path(diffID); s.put(written, p) == nil {
		written = p
	}
	return storedLayer(written, diffID)
}

// put moves the compressed file src into the store as dst (copies it, across file systems).
func (s layerStore) put(src, dst string) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	if os.Rename(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(s.dir, ".put-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(out.Name(), dst)
	}
	if err != nil {
		os.Remove(out.Name())
	}
	return err
}

// trim removes the least recently used files past max bytes, and temporary files of builds
// that died (older than a day).
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
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(s.dir, e.Name())
		if strings.HasPrefix(e.Name(), ".put-") {
			if time.Since(fi.ModTime()) > 24*time.Hour {
				os.Remove(p)
			}
			continue
		}
		files = append(files, file{p, fi.Size(), fi.ModTime()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.After(files[j].used) })
	var total int64
	for _, f := range files {
		total += f.size
		if total > max {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// fileLayer is a gzip-compressed layer in a file whose diffID is known: its digest is computed
// from the file when the layer is made (a read, no decompression).
type fileLayer struct {
	path           string
	digest, diffID v1.Hash
	size           int64
}

func storedLayer(path string, diffID v1.Hash) (v1.Layer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", path, err)
	}
	return &fileLayer{path: path, diffID: diffID, size: n,
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
