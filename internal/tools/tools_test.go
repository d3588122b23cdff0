package tools

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mkfile creates path (and its parents) as an executable file.
func mkfile(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindFromClonesAndCache(t *testing.T) {
	root := t.TempDir()
	clone := filepath.Join(root, "clone")
	etcd := mkfile(t, filepath.Join(clone, ".tools", "bin", "etcd"))
	exe := mkfile(t, filepath.Join(clone, "bin", "continuum"))
	link := filepath.Join(root, "elsewhere", "continuum")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(root, "cache")
	redis := mkfile(t, filepath.Join(cache, "redis-7.0.15-0123456789abcdef", "redis-server"))
	mkfile(t, filepath.Join(cache, "redis-7.0.15-fedcba9876543210.tmp.42", "redis-server"))
	venv := mkfile(t, filepath.Join(cache, "venv-0123456789abcdef-py3.11", "bin", "python"))
	venvFL := mkfile(t, filepath.Join(cache, "venv-fl-0123456789abcdef-py3.11", "bin", "python"))
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		f      Finder
		tool   Tool
		want   string
		wantOK bool
	}{
		{"working directory inside the clone", Finder{WD: filepath.Join(clone, "bin")}, Bin("etcd"), etcd, true},
		{"executable in the clone", Finder{WD: other, Exe: exe}, Bin("etcd"), etcd, true},
		{"executable symlinked from elsewhere", Finder{WD: other, Exe: link}, Bin("etcd"), etcd, true},
		{"neither: not found", Finder{WD: other}, Bin("etcd"), "", false},
		{"binary in the cache", Finder{WD: other, Cache: cache}, Bin("redis-server"), redis, true},
		{"venv in the cache", Finder{WD: other, Cache: cache}, Venv("venv"), venv, true},
		{"venv-fl in the cache", Finder{WD: other, Cache: cache}, Venv("venv-fl"), venvFL, true},
		{"not in the cache", Finder{WD: other, Cache: cache}, Bin("etcd"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.f.Find(tt.tool)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("Find(%s) = %q, %v; want %q, %v", tt.tool.Path, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestFindNewestCacheEntry(t *testing.T) {
	cache := t.TempDir()
	old := mkfile(t, filepath.Join(cache, "etcd-aaaa", "etcd"))
	newer := mkfile(t, filepath.Join(cache, "etcd-bbbb", "etcd"))
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Dir(old), past, past); err != nil {
		t.Fatal(err)
	}
	if got, _ := (Finder{Cache: cache}).Find(Bin("etcd")); got != newer {
		t.Errorf("Find = %q, want the newer build %q", got, newer)
	}
}

// TestDefaultFromAnotherDirectory runs the process's own lookup from a working directory outside
// any clone: the cache ($CONTINUUM_CACHE) still finds the tool.
func TestDefaultFromAnotherDirectory(t *testing.T) {
	cache := t.TempDir()
	want := mkfile(t, filepath.Join(cache, "etcd-0123456789abcdef-go1", "etcd-test-tool"))
	t.Setenv("CONTINUUM_CACHE", cache)
	t.Chdir(t.TempDir())
	got, ok := Find(Bin("etcd-test-tool"))
	if !ok || got != want {
		t.Errorf("Find from %s = %q, %v; want %q", Default().WD, got, ok, want)
	}
}
