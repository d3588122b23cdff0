package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// repoRoot is the module root: the nearest directory above the working directory with go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatal("no go.mod above the working directory")
		}
	}
}

// chartDir is deploy/helm/continuum in the module.
func chartDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "deploy", "helm", "continuum")
}

// helmBin finds helm; without it the test skips, or fails when CONTINUUM_REQUIRE_ROOT=1 (make
// test, after make setup built it).
func helmBin(t *testing.T) string {
	t.Helper()
	cands := []string{os.Getenv("CONTINUUM_HELM"), filepath.Join(repoRoot(t), ".tools", "bin", "helm")}
	if p, err := exec.LookPath("helm"); err == nil {
		cands = append(cands, p)
	}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal("no helm: make setup builds .tools/bin/helm (or set $CONTINUUM_HELM)")
	}
	t.Skip("no helm (make setup builds .tools/bin/helm)")
	return ""
}

// helm runs helm with args and returns its stdout, or its error with stderr.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	// A private helm home: the test neither reads nor writes the user's repositories or cache.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String()) + " (" + err.Error() + ")")
	}
	return stdout.String(), nil
}

// strict decodes Kubernetes objects rejecting unknown and duplicate fields.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// rendered is one rendered document: its object and its source template.
type rendered struct {
	obj    runtime.Object
	source string
}

// render runs helm template with the release "ct" in namespace "edge" and decodes every
// document strictly; a document that does not decode fails the test, naming its template.
func render(t *testing.T, args ...string) []rendered {
	t.Helper()
	out, err := helm(t, append([]string{"template", "ct", chartDir(t), "--namespace", "edge"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	docs, errs := decodeAll(t, out)
	for _, err := range errs {
		t.Error(err)
	}
	return docs
}

// decodeAll decodes every document of helm's output strictly; a document that does not decode
// is an error naming its template.
func decodeAll(t *testing.T, out string) (docs []rendered, errs []error) {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, errs
		}
		if err != nil {
			t.Fatal(err)
		}
		source := ""
		for _, l := range strings.Split(string(doc), "\n") {
			if s, ok := strings.CutPrefix(l, "# Source: "); ok {
				source = s
			}
		}
		if !hasContent(doc) {
			continue
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w\n%s", source, err, doc))
			continue
		}
		docs = append(docs, rendered{obj, source})
	}
}

// hasContent is whether a YAML document holds more than comments and blank lines.
func hasContent(doc []byte) bool {
	for _, l := range strings.Split(string(doc), "\n") {
		if l = strings.TrimSpace(l); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}
