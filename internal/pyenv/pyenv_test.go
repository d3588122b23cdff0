package pyenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

var testVenv = Venv{Dir: "venv", Package: "continuum_functions", PythonEnv: "CONTINUUM_TEST_PYTHON", SrcEnv: "CONTINUUM_TEST_PYTHON_SRC"}

// From a working directory inside the clone, the venv and python/src are the clone's.
func TestFindInClone(t *testing.T) {
	t.Setenv("CONTINUUM_CACHE", t.TempDir())
	clone := t.TempDir()
	py := filepath.Join(clone, ".tools", "venv", "bin", "python")
	mkdirs(t, filepath.Dir(py), filepath.Join(clone, "python", "src", "continuum_functions"), filepath.Join(clone, "scenarios"))
	if err := os.WriteFile(py, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(clone, "scenarios"))
	got, err := Find(testVenv)
	if err != nil || got.Interpreter != py || got.Src != filepath.Join(clone, "python", "src") {
		t.Fatalf("Find = %+v, %v; want %s and the clone's python/src", got, err, py)
	}
}

// Outside any clone the interpreter comes from the setup cache, but python/src has to be named.
func TestFindOutsideClone(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("CONTINUUM_CACHE", cache)
	py := filepath.Join(cache, "venv-0123456789abcdef-py3.11", "bin", "python")
	mkdirs(t, filepath.Dir(py))
	if err := os.WriteFile(py, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if _, err := Find(testVenv); err == nil || !strings.Contains(err.Error(), "$CONTINUUM_TEST_PYTHON_SRC") {
		t.Fatalf("Find without a clone: %v; want an error naming $CONTINUUM_TEST_PYTHON_SRC", err)
	}
	src := t.TempDir()
	mkdirs(t, filepath.Join(src, "continuum_functions"))
	t.Setenv("CONTINUUM_TEST_PYTHON_SRC", src)
	got, err := Find(testVenv)
	if err != nil || got.Interpreter != py || got.Src != src {
		t.Fatalf("Find = %+v, %v; want the cached %s and %s", got, err, py, src)
	}
}
