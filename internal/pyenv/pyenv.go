// Package pyenv locates the Python virtual environments `make setup` builds in a clone
// (.tools/<venv>) and the clone's python/src, for the systems that start Python processes: the
// function runtimes (.tools/venv) and the federated-learning services (.tools/venv-fl, which
// carries PyTorch and Flower and is kept apart so a function never loads them).
package pyenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/continuum-project/continuum/internal/tools"
)

// Venv names one of the venvs: its folder under .tools, the package it runs from python/src, and
// the environment variables that override where the interpreter and python/src are.
type Venv struct {
	Dir       string // e.g. "venv"
	Package   string // e.g. "continuum_functions"
	PythonEnv string // e.g. "CONTINUUM_PYTHON"
	SrcEnv    string // e.g. "CONTINUUM_PYTHON_SRC"
	Stack     string // the setup stack that builds it (internal/setup), for messages: "functions"
}

// Python is an interpreter and the directory to put on PYTHONPATH.
type Python struct {
	Interpreter string
	Src         string
}

// Find locates v: the interpreter and src from v's environment variables, else from what `make
// setup` installed (internal/tools): the interpreter from the clone above the working directory or
// the executable, or the setup cache; src from the nearest such clone that has python/src. It
// fails, naming what to run or set, when the interpreter or the package is missing.
func Find(v Venv) (Python, error) {
	p := Python{Interpreter: os.Getenv(v.PythonEnv), Src: os.Getenv(v.SrcEnv)}
	if p.Interpreter == "" {
		py, ok := tools.Find(tools.Venv(v.Dir))
		if !ok {
			return p, fmt.Errorf("python venv .tools/%s not found in %s: run `continuum setup %s` in the clone, or set $%s and $%s",
				v.Dir, tools.Searched(), v.Stack, v.PythonEnv, v.SrcEnv)
		}
		p.Interpreter = py
	}
	if p.Src == "" {
		root, err := Root(v.Dir)
		if err != nil {
			return p, fmt.Errorf("%w, or set $%s", err, v.SrcEnv)
		}
		p.Src = filepath.Join(root, "python", "src")
	}
	if _, err := os.Stat(p.Interpreter); err != nil {
		return p, fmt.Errorf("python interpreter %s: %w (run `continuum setup %s`, or set $%s)", p.Interpreter, err, v.Stack, v.PythonEnv)
	}
	if _, err := os.Stat(filepath.Join(p.Src, v.Package)); err != nil {
		return p, fmt.Errorf("%s not in %s (set $%s to the clone's python/src)", v.Package, p.Src, v.SrcEnv)
	}
	return p, nil
}

// Root is the nearest clone, from the working directory or the executable (symlinks followed) up,
// that holds .tools/<venv> and python/src: the clone `make setup` ran in.
func Root(venv string) (string, error) {
	for _, d := range tools.Clones() {
		if isDir(filepath.Join(d, ".tools", venv)) && isDir(filepath.Join(d, "python", "src")) {
			return d, nil
		}
	}
	return "", errors.New("no clone with .tools/" + venv + " and python/src in " + tools.Searched() + ": run `continuum setup` in the clone (continuum setup --status says which stack has it)")
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
