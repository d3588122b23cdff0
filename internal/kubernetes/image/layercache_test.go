package image

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// storeSpec is an image of two layers: a fixed one and one holding the host file bin.
func storeSpec(t *testing.T, bin string) Spec {
	t.Helper()
	top := NewTree()
	if err := top.File("usr/local/bin/x", bin); err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "test/store:1", Layers: []Layer{{baseTree(), "base"}, {top, "x"}}, Entrypoint: []string{"/usr/local/bin/x"}}
}

func digestsOf(t *testing.T, img v1.Image) (manifest v1.Hash, layers []v1.Hash) {
	t.Helper()
	m, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, d)
	}
	return m, layers
}

func filesIn(t *testing.T, dir, suffix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// inodes are the store's files by name: a file written again is a new file (rename).
func inodes(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, name := range filesIn(t, dir, ".tar.gz") {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		m[name] = fi.Sys().(*syscall.Stat_t).Ino
	}
	return m
}

// TestLayerStoreGivesTheSameBytes: an image built with an empty store, with a full one, and
// without one has the same digests; the build with a full store writes nothing to it; a
// changed file makes one new entry; a stored layer's content hashes to its diffID.
func TestLayerStoreGivesTheSameBytes(t *testing.T) {
	epoch := time.Unix(1700000000, 0).UTC()
	bin := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(bin, []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	store := &layerStore{dir: t.TempDir()}
	plain, err := build(storeSpec(t, bin), epoch, t.TempDir(), layerCache{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantM, wantL := digestsOf(t, plain)
	var stored map[string]uint64
	for _, round := range []string{"empty store", "full store"} {
		img, err := build(storeSpec(t, bin), epoch, t.TempDir(), layerCache{}, store)
		if err != nil {
			t.Fatal(err)
		}
		if m, l := digestsOf(t, img); m != wantM || !slices.Equal(l, wantL) {
			t.Errorf("%s: manifest %v layers %v, want %v %v (built without a store)", round, m, l, wantM, wantL)
		}
		if round == "full store" {
			if now := inodes(t, store.dir); !maps.Equal(now, stored) {
				t.Errorf("with every layer stored, the build wrote the store again: files %v, were %v", now, stored)
			}
		}
		stored = inodes(t, store.dir)
		if n := len(filesIn(t, store.dir, ".tar.gz")); n != 2 {
			t.Errorf("%s: %d stored layers, want 2", round, n)
		}
	}
	if err := os.WriteFile(bin, []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := build(storeSpec(t, bin), epoch, t.TempDir(), layerCache{}, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, l := digestsOf(t, img); l[0] != wantL[0] || l[1] == wantL[1] {
		t.Errorf("after changing x: layers %v, want the base's %v kept and x's %v changed", l, wantL[0], wantL[1])
	}
	if n := len(filesIn(t, store.dir, ".tar.gz")); n != 3 {
		t.Errorf("after changing x: %d stored layers, want 3", n)
	}
	ls, _ := img.Layers()
	rc, err := ls[1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if d, _ := ls[1].DiffID(); d.Hex != hex.EncodeToString(h.Sum(nil)) {
		t.Errorf("stored layer's content hashes to %x, its diffID is %v", h.Sum(nil), d)
	}
}

// TestLayerStoreTrim: past the bound, the least recently used files go first; a build's
// temporary file goes after a day.
func TestLayerStoreTrim(t *testing.T) {
	s := layerStore{dir: t.TempDir()}
	now := time.Now()
	for i, name := range []string{"old.tar.gz", "mid.tar.gz", "new.tar.gz", ".put-123", ".put-456"} {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
		age := time.Duration(3-i) * time.Hour
		if name == ".put-123" {
			age = 25 * time.Hour
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.trim(250); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{".put-456", "mid.tar.gz", "new.tar.gz"}; !slices.Equal(left, want) {
		t.Errorf("after trim to 250 bytes: %v, want %v", left, want)
	}
}

// TestLayerStoreUnwritable: a store that cannot be written does not stop a build.
func TestLayerStoreUnwritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(dir, nil, 0o644); err != nil { // a file where the directory would be
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(bin, []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := build(storeSpec(t, bin), time.Unix(0, 0), t.TempDir(), layerCache{}, &layerStore{dir: dir}); err != nil {
		t.Errorf("build with an unwritable store: %v", err)
	}
}

// TestCompressedLayerHashIsOfItsBytes: the diffID writeGzipHashed returns is the hash of the
// tar inside the file it wrote (what the store keys by), not of an earlier reading.
func TestCompressedLayerHashIsOfItsBytes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(bin, []byte("content"), 0o755); err != nil {
		t.Fatal(err)
	}
	tree := storeSpec(t, bin).Layers[1].Tree
	before, err := tree.diffID(time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("changed"), 0o755); err != nil { // between hash and compression
		t.Fatal(err)
	}
	path, diffID, err := tree.writeGzipHashed(t.TempDir(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := gunzipFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); diffID.Hex != got || diffID == before {
		t.Errorf("diffID %v, the file's tar hashes to %s (the earlier reading's: %v)", diffID, got, before)
	}
}

// TestLayerStoreDistrustsItsFiles: a stored file whose content is another layer's, or a
// symlink where a layer should be, is not used: the build's image is the same as without a
// store, and the entry is replaced by the right layer.
func TestLayerStoreDistrustsItsFiles(t *testing.T) {
	epoch := time.Unix(1700000000, 0).UTC()
	bin := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(bin, []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain, err := build(storeSpec(t, bin), epoch, t.TempDir(), layerCache{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantM, wantL := digestsOf(t, plain)
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, a, b string) // a, b: the two stored files
	}{
		{"another layer's content", func(t *testing.T, a, b string) {
			data, err := os.ReadFile(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(a, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink", func(t *testing.T, a, b string) {
			if err := os.Remove(a); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(b, a); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, a, _ string) {
			if err := os.Truncate(a, 10); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &layerStore{dir: t.TempDir()}
			if _, err := build(storeSpec(t, bin), epoch, t.TempDir(), layerCache{}, store); err != nil {
				t.Fatal(err)
			}
			names := filesIn(t, store.dir, ".tar.gz")
			if len(names) != 2 {
				t.Fatalf("stored %v, want 2 layers", names)
			}
			tc.spoil(t, filepath.Join(store.dir, names[0]), filepath.Join(store.dir, names[1]))
			img, err := build(storeSpec(t, bin), epoch, t.TempDir(), layerCache{}, store)
			if err != nil {
				t.Fatal(err)
			}
			if m, l := digestsOf(t, img); m != wantM || !slices.Equal(l, wantL) {
				t.Errorf("manifest %v layers %v, want %v %v", m, l, wantM, wantL)
			}
			for _, name := range names {
				l, err := fileLayerOf(filepath.Join(store.dir, name), v1.Hash{})
				if err != nil {
					t.Errorf("store entry %s after the build: %v", name, err)
					continue
				}
				if store.path(l.diffID) != filepath.Join(store.dir, name) {
					t.Errorf("store entry %s holds %v, another key's content", name, l.diffID)
				}
			}
		})
	}
}
