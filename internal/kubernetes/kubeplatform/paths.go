package kubeplatform

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/kubernetes/image"
	"github.com/continuum-project/continuum/internal/pyenv"
)

// imagePaths rewrites the runner's clone's Python paths in an instance's command line and
// environment to where the images keep the same files: kinds render them on the runner's host (a
// function's handler folder, the venv's interpreter in CONTINUUM_PYTHON, python/src), and the
// python and fl images carry python/src, python/functions and the venvs under
// image.PythonRoot. Each pair is a host prefix and its image prefix, longest host prefix first;
// a path is rewritten where a path may start in an argument (see rewrite: a flag's value inside
// another, as in --function name=hello,handler=PATH, included), never inside a longer path.
type imagePaths [][2]string

// clonePaths are the runner's clone's Python directories (found as `continuum setup` made them:
// pyenv.Root), each also by its real path (the venvs are links into the setup cache), mapped to
// the images' layout. None when the runner has no clone with the Python side.
func clonePaths() imagePaths {
	var m imagePaths
	add := func(host, img string) {
		m = append(m, [2]string{host + "/", img + "/"})
		if real, err := filepath.EvalSymlinks(host); err == nil && real != host {
			m = append(m, [2]string{real + "/", img + "/"})
		}
	}
	seen := map[string]bool{}
	for _, venv := range []string{"venv", "venv-fl"} {
		root, err := pyenv.Root(venv)
		if err != nil {
			continue
		}
		add(filepath.Join(root, ".tools", venv), image.PythonRoot+"/"+venv)
		if !seen[root] {
			seen[root] = true
			add(filepath.Join(root, "python"), image.PythonRoot+"/python")
		}
	}
	sort.SliceStable(m, func(i, j int) bool { return len(m[i][0]) > len(m[j][0]) })
	return m
}

// rewrite returns s with each path under a host prefix, or the prefix's directory itself,
// replaced by its image prefix: a path starts s or follows '=', ',' or ':' (a flag's value, a
// list of key=value pairs, a PATH-like list), and the directory itself ends there or at ',' or
// ':'. Text after a replacement is not looked at again, so an image path is never rewritten.
func (m imagePaths) rewrite(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || strings.IndexByte("=,:", s[i-1]) >= 0 {
			if host, img, ok := m.match(s[i:]); ok {
				b.WriteString(img)
				i += len(host)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// match finds the pair whose host prefix (or directory) t starts with, longest first, and
// returns the host text matched and its replacement.
func (m imagePaths) match(t string) (host, img string, ok bool) {
	for _, p := range m {
		if strings.HasPrefix(t, p[0]) {
			return p[0], p[1], true
		}
		dir := strings.TrimSuffix(p[0], "/")
		if rest, found := strings.CutPrefix(t, dir); found && (rest == "" || rest[0] == ',' || rest[0] == ':') {
			return dir, strings.TrimSuffix(p[1], "/"), true
		}
	}
	return "", "", false
}

// all rewrites each of ss, in a new slice.
func (m imagePaths) all(ss []string) []string {
	if len(m) == 0 || ss == nil {
		return ss
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = m.rewrite(s)
	}
	return out
}
