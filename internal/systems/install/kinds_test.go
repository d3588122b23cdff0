package install

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/experiment/kind"
)

// TestKindsSayWhoseTheyAre: every shipped kind records its system, which is the folder its
// kinds package lives in (so the record cannot drift from the code), and its doc link names a
// file of the repository and, with an #anchor, a heading of that file.
func TestKindsSayWhoseTheyAre(t *testing.T) {
	all := kind.All()
	if len(all) < 20 {
		t.Fatalf("%d kinds registered: install imports every system", len(all))
	}
	for _, k := range all {
		if k.System == "" {
			t.Errorf("kind %s: no System", k.Name)
			continue
		}
		if want := module + "internal/" + k.System + "/kinds"; k.Package != want {
			t.Errorf("kind %s: System %q, but registered by %s (want %s)", k.Name, k.System, k.Package, want)
		}
		if m := regexp.MustCompile(`seeds/\d+`).FindString(k.Summary); m != "" {
			t.Errorf("kind %s: summary cites %s, which users do not have: name the paper (docs/seeds.md)", k.Name, m)
		}
		file, anchor, _ := strings.Cut(k.Doc, "#")
		b, err := os.ReadFile(filepath.Join("..", "..", "..", file))
		if err != nil {
			t.Errorf("kind %s: doc %q: %v", k.Name, k.Doc, err)
			continue
		}
		if anchor != "" && !slices.Contains(headingAnchors(string(b)), anchor) {
			t.Errorf("kind %s: doc %q: no heading with anchor %q in %s", k.Name, k.Doc, anchor, file)
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings: lower case, spaces
// to '-', punctuation but '-' and '_' dropped.
func headingAnchors(md string) []string {
	var out []string
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		out = append(out, strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-"))
	}
	return out
}

// oldNameTestedElsewhere names the renamed kinds no shipped scenario uses, and the test that
// loads their old name instead.
var oldNameTestedElsewhere = map[string]string{
	"app-container": "internal/app/kinds TestContainerOldName (its config needs an image)",
}

// TestOldKindNamesLoad: a scenario that names a kind by a former name still loads, as the
// kind, with one warning that names the kind's name now. Each old name is put in a shipped
// scenario that uses the kind.
func TestOldKindNamesLoad(t *testing.T) {
	scenarios := shippedScenarios(t)
	renamed := 0
	for _, k := range kind.All() {
		for _, old := range k.OldNames {
			renamed++
			if got, ok := kind.Renamed(old); !ok || got != k.Name {
				t.Errorf("kind.Renamed(%q) = %q, %v; want %q", old, got, ok, k.Name)
			}
			use := regexp.MustCompile(`(?m)(kind: *)` + regexp.QuoteMeta(k.Name) + `\b`)
			var file string
			var src []byte
			for _, f := range scenarios {
				if b, _ := os.ReadFile(f); use.Match(b) {
					file, src = f, b
					break
				}
			}
			if file == "" {
				if _, ok := oldNameTestedElsewhere[k.Name]; !ok {
					t.Errorf("kind %s: no shipped scenario uses it to load %q in; add it to oldNameTestedElsewhere with the test that does", k.Name, old)
				}
				continue
			}
			n := len(use.FindAll(src, -1))
			src = use.ReplaceAll(src, []byte("${1}"+old))
			sc, err := experiment.ParseScenario(file, src, nil)
			if err != nil {
				t.Errorf("%s with kind %q: %v", file, old, err)
				continue
			}
			var warned int
			for _, w := range sc.Warnings {
				if strings.Contains(w, `"`+old+`" is deprecated, use "`+k.Name+`"`) {
					warned++
				}
			}
			if warned != n || len(sc.Warnings) != n {
				t.Errorf("%s with kind %q (%d uses): warnings %q", file, old, n, sc.Warnings)
			}
			for _, inst := range append(sc.Components, sc.Workloads...) {
				if inst.Kind == old {
					t.Errorf("%s: instance %s keeps the old kind name %q: the run would record it", file, inst.Name, old)
				}
			}
		}
	}
	if renamed == 0 {
		t.Fatal("no kind has an old name")
	}
}

// shippedScenarios are the scenario files under scenarios/ (not the topology files).
func shippedScenarios(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join("..", "..", "..", "scenarios"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && regexp.MustCompile(`(?m)^version:`).Match(b) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil || len(out) < 10 {
		t.Fatalf("scenarios/: %d files, %v", len(out), err)
	}
	return out
}
