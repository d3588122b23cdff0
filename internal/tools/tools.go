// Package tools locates what `make setup` installs (etcd, Redis, Kafka, the Kubernetes binaries,
// the Python venvs, ...) from wherever the binary runs: in a clone's .tools above the working
// directory, in the clone the running executable belongs to (bin/continuum, symlinks followed), and
// in the setup cache the .tools entries link to. It owns only the search; each caller keeps its own
// override ($CONTINUUM_*_BIN, flags) and its own error text.
package tools

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Tool is one thing setup installs: where a clone links it (.tools/<Path>) and where the setup
// cache holds it (<cache>/<CacheDir>/<CacheRel>, CacheDir a glob over the keyed directory names
// such as "etcd-*", because the key is a hash of the inputs the clone's setup used).
type Tool struct {
	Path     string // under .tools, e.g. "bin/etcd", "kafka", "venv"
	CacheDir string // glob of the cache directory, e.g. "etcd-*"; empty: not searched in the cache
	CacheRel string // path inside it, e.g. "etcd"; empty: the directory itself
	// OK accepts a candidate path (default: it exists). Kafka, for example, needs its jars.
	OK func(path string) bool
}

// Bin is a binary setup links into .tools/bin: found in any cache directory that holds it.
func Bin(name string) Tool {
	return Tool{Path: "bin/" + name, CacheDir: "*", CacheRel: name, OK: isFile}
}

// Finder holds where to search. Default() is the running process's; tests build their own.
type Finder struct {
	WD    string // the working directory
	Exe   string // the running executable
	Cache string // the setup cache
}

// Default is the running process's Finder: its working directory, its executable and CacheDir().
func Default() Finder {
	var f Finder
	f.WD, _ = os.Getwd()
	f.Exe, _ = os.Executable()
	f.Cache = CacheDir()
	return f
}

// Find searches with Default(); see Finder.Find.
func Find(t Tool) (string, bool) { return Default().Find(t) }

// Clones searches with Default(); see Finder.Clones.
func Clones() []string { return Default().Clones() }

// Searched describes Default()'s search for error messages; see Finder.Searched.
func Searched() string { return Default().Searched() }

// CacheDir is the setup cache, as scripts/setup.sh computes it: $CONTINUUM_CACHE, else
// $XDG_CACHE_HOME/continuum, else ~/.cache/continuum.
func CacheDir() string {
	if d := os.Getenv("CONTINUUM_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "continuum")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "continuum")
	}
	return ""
}

// Clones lists the directories holding .tools, nearest first: those above the working directory,
// then those above the executable as invoked and with its symlinks resolved (a clone's
// bin/continuum linked from ~/bin still finds its clone). Each appears once.
func (f Finder) Clones() []string {
	var starts []string
	if f.WD != "" {
		starts = append(starts, f.WD)
	}
	if f.Exe != "" {
		starts = append(starts, filepath.Dir(f.Exe))
		if r, err := filepath.EvalSymlinks(f.Exe); err == nil {
			starts = append(starts, filepath.Dir(r))
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range starts {
		s, err := filepath.Abs(s)
		if err != nil {
			continue
		}
		for d := s; ; d = filepath.Dir(d) {
			if !seen[d] && isDir(filepath.Join(d, ".tools")) {
				seen[d] = true
				out = append(out, d)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return out
}

// Find returns t's path: .tools/<t.Path> in the first of Clones() where t.OK accepts it, else the
// most recently built match in the setup cache (an older key is a superseded setup). Partial
// builds (setup's "<dir>.tmp.<pid>") are never returned.
func (f Finder) Find(t Tool) (string, bool) {
	ok := t.OK
	if ok == nil {
		ok = exists
	}
	for _, c := range f.Clones() {
		if p := filepath.Join(c, ".tools", filepath.FromSlash(t.Path)); ok(p) {
			return p, true
		}
	}
	if f.Cache == "" || t.CacheDir == "" {
		return "", false
	}
	dirs, _ := filepath.Glob(filepath.Join(f.Cache, t.CacheDir))
	type cand struct {
		path string
		mod  int64
	}
	var cands []cand
	for _, d := range dirs {
		if strings.Contains(filepath.Base(d), ".tmp.") {
			continue
		}
		p := filepath.Join(d, filepath.FromSlash(t.CacheRel))
		if fi, err := os.Stat(d); err == nil && ok(p) {
			cands = append(cands, cand{p, fi.ModTime().UnixNano()})
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].mod > cands[j].mod })
	return cands[0].path, true
}

// Searched says where Find looked, for an error message: "… not found in .tools above <wd> and
// <exe>, nor in <cache>".
func (f Finder) Searched() string {
	var where []string
	if f.WD != "" {
		where = append(where, f.WD)
	}
	if f.Exe != "" {
		where = append(where, f.Exe)
	}
	s := ".tools above " + strings.Join(where, " and ")
	if f.Cache != "" {
		s += ", nor in the setup cache " + f.Cache
	}
	return s
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Venv is one of setup's Python venvs (.tools/<name>): its interpreter, bin/python. In the cache
// it is <name>-<16 hex digits of the requirements' hash>-py<version>, spelled out so that "venv"
// does not match "venv-fl-…".
func Venv(name string) Tool {
	return Tool{Path: name + "/bin/python", CacheDir: name + "-" + strings.Repeat("[0-9a-f]", 16) + "-*", CacheRel: "bin/python"}
}
