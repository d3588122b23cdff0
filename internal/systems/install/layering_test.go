package install

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/continuum-project/continuum/"

// engines are the packages every system builds on; they must not depend on any system, so that
// adding a system never means editing them (docs/architecture.md).
var engines = []string{
	"internal/benchkit",
	"internal/experiment",
	"internal/experiment/kind",
	"internal/report",
	"internal/report/chart",
	"internal/results",
	"internal/loadgen",
	"internal/procstat",
	"internal/testbed",
}

// TestEnginesImportNoSystem: the systems are the folders whose scenario adapters this package
// imports; no engine package may import one of their packages, directly or not.
func TestEnginesImportNoSystem(t *testing.T) {
	imports := goList(t, "-f", `{{join .Imports "\n"}}`, ".")
	var systems []string
	for _, p := range imports {
		if root, ok := strings.CutSuffix(p, "/scenario"); ok && strings.HasPrefix(p, module) {
			systems = append(systems, root)
		}
	}
	if len(systems) < 4 {
		t.Fatalf("found %d systems in this package's imports (%v); want every system's scenario adapter", len(systems), imports)
	}
	for _, e := range engines {
		deps := goList(t, "-deps", "-f", "{{.ImportPath}}", module+e)
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s: %v", e, deps)
		}
		if bad := systemDeps(deps, systems); len(bad) > 0 {
			t.Errorf("%s depends on system packages %s: an engine must not know a system (move the code into the system's scenario adapter)", e, strings.Join(bad, ", "))
		}
	}
}

// TestSystemDepsFindsAnImport is the check above against a made-up dependency list: it names
// the offending package.
func TestSystemDepsFindsAnImport(t *testing.T) {
	systems := []string{module + "internal/kv", module + "internal/proxy"}
	deps := []string{"fmt", module + "internal/spec", module + "internal/kvtarget", module + "internal/kv/mvcc", module + "internal/proxy"}
	got := systemDeps(deps, systems)
	if strings.Join(got, ",") != module+"internal/kv/mvcc,"+module+"internal/proxy" {
		t.Fatalf("systemDeps = %v", got)
	}
}

func systemDeps(deps, systems []string) []string {
	var bad []string
	for _, d := range deps {
		for _, s := range systems {
			if d == s || strings.HasPrefix(d, s+"/") {
				bad = append(bad, d)
				break
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}
