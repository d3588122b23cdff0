package faas

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/pyenv"
)

// Modes a function instance runs in (see the package doc).
const (
	ModeMicro   = "micro"
	ModeClassic = "classic"
	ModeHTTP    = "http"
)

// Modes lists them, for error messages.
var Modes = []string{ModeMicro, ModeClassic, ModeHTTP}

// Servers a long-lived Python instance (micro, or http's upstream) can use.
const (
	ServerContinuum = "continuum" // continuum_functions.server: asyncio HTTP/1.1, one request at a time
	ServerFlask     = "flask"     // continuum_functions.flaskapp: Flask + Waitress, one worker thread
)

// Python is how to start the Python runtimes: the interpreter and the directory holding the
// continuum_functions package (put on PYTHONPATH).
type Python struct {
	Interpreter string
	Src         string
}

// FindPython locates the venv `make setup` builds (.tools/venv) and python/src: from
// $CONTINUUM_PYTHON / $CONTINUUM_PYTHON_SRC, else in the working directory or a parent (the
// repository), else above the running executable (bin/continuum in a clone).
func FindPython() (Python, error) {
	p, err := pyenv.Find(pyenv.Venv{Dir: "venv", Package: "continuum_functions", PythonEnv: "CONTINUUM_PYTHON", SrcEnv: "CONTINUUM_PYTHON_SRC", Stack: "functions"})
	return Python(p), err
}

// ResolveHandler makes a function folder (or its handler.py) absolute: as given, else
// relative to the repository (scenarios name python/functions/...).
func ResolveHandler(path string) (string, error) {
	if path == "" {
		return "", errors.New("handler: name a function folder (e.g. python/functions/hello) or its handler.py")
	}
	cands := []string{path}
	if !filepath.IsAbs(path) {
		if root, err := pyenv.Root("venv"); err == nil {
			cands = append(cands, filepath.Join(root, path))
		}
	}
	for _, c := range cands {
		fi, err := os.Stat(c)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			if _, err := os.Stat(filepath.Join(c, "handler.py")); err != nil {
				return "", fmt.Errorf("handler %s: the folder has no handler.py", path)
			}
		}
		return filepath.Abs(c)
	}
	return "", fmt.Errorf("handler %s: no such function folder or file", path)
}

// ServerArgs is the command line of a long-lived Python instance serving handler on
// host:port. Continuum's server stops a handler past execTimeout (> 0) with a 504; Flask +
// Waitress has no such limit.
func (p Python) ServerArgs(server, handler, host string, port int, execTimeout time.Duration) ([]string, error) {
	module := "continuum_functions.server"
	switch server {
	case ServerContinuum, "":
	case ServerFlask:
		module = "continuum_functions.flaskapp"
	default:
		return nil, fmt.Errorf("server %q: want %s or %s", server, ServerContinuum, ServerFlask)
	}
	args := []string{p.Interpreter, "-m", module, handler, "--host", host, "--port", fmt.Sprint(port)}
	if server != ServerFlask && execTimeout > 0 {
		args = append(args, "--exec-timeout", strconv.FormatFloat(execTimeout.Seconds(), 'f', -1, 64))
	}
	return args, nil
}

// ClassicArgs is the command line the classic watchdog execs per request.
func (p Python) ClassicArgs(handler string) []string {
	return []string{p.Interpreter, "-m", "continuum_functions.classic", handler}
}

// Env is the environment the Python runtimes need on top of the inherited one.
// LocateEnv lets another continuum process (a watchdog, a gateway) find this Python wherever
// its binary and working directory are (FindPython reads these first).
func (p Python) LocateEnv() []string {
	return []string{"CONTINUUM_PYTHON=" + p.Interpreter, "CONTINUUM_PYTHON_SRC=" + p.Src}
}

func (p Python) Env() []string {
	return []string{"PYTHONPATH=" + p.Src, "PYTHONDONTWRITEBYTECODE=1"}
}
