package kubeplatform

import "testing"

func TestImagePaths(t *testing.T) {
	m := imagePaths{
		{"/root/.cache/continuum/venv-abc/", "/opt/continuum/venv/"},
		{"/src/clone/.tools/venv/", "/opt/continuum/venv/"},
		{"/src/clone/python/", "/opt/continuum/python/"},
	}
	for in, want := range map[string]string{
		"CONTINUUM_PYTHON=/src/clone/.tools/venv/bin/python":          "CONTINUUM_PYTHON=/opt/continuum/venv/bin/python",
		"CONTINUUM_PYTHON=/root/.cache/continuum/venv-abc/bin/python": "CONTINUUM_PYTHON=/opt/continuum/venv/bin/python",
		"CONTINUUM_PYTHON_SRC=/src/clone/python/src":                  "CONTINUUM_PYTHON_SRC=/opt/continuum/python/src",
		"name=hello,handler=/src/clone/python/functions/hello,min=0":  "name=hello,handler=/opt/continuum/python/functions/hello,min=0",
		"--dir=/src/clone/python":                                     "--dir=/opt/continuum/python",
		"/src/clone/python":                                           "/opt/continuum/python",
		"/src/clone/pythonic/x":                                       "/src/clone/pythonic/x", // another directory
		"/elsewhere/src/clone/python-x":                               "/elsewhere/src/clone/python-x",
		"/src/clone/results/run/python":                               "/src/clone/results/run/python",
		"/home/u/src/clone/python/f":                                  "/home/u/src/clone/python/f", // ends in the clone's path: another tree
		"--handler=/data/src/clone/python/h":                          "--handler=/data/src/clone/python/h",
		"PYTHONPATH=/src/clone/python/src:/src/clone/python":          "PYTHONPATH=/opt/continuum/python/src:/opt/continuum/python",
		"x=/src/clone/python,y=1":                                     "x=/opt/continuum/python,y=1",
	} {
		if got := m.rewrite(in); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
	// A clone whose path is a suffix of the image's root: image paths are not rewritten again.
	if got := (imagePaths{{"/continuum/python/", "/opt/continuum/python/"}}).rewrite("/opt/continuum/python/src"); got != "/opt/continuum/python/src" {
		t.Errorf("an image path rewritten: %q", got)
	}
	if got := (imagePaths(nil)).all([]string{"/src/clone/python/x"}); got[0] != "/src/clone/python/x" {
		t.Errorf("no paths: %v", got)
	}
	args := []string{"/bin/continuum", "/src/clone/python/functions/f"}
	if got := m.all(args); got[1] != "/opt/continuum/python/functions/f" || args[1] != "/src/clone/python/functions/f" {
		t.Errorf("all = %v, and the input %v must be left as it was", got, args)
	}
}
