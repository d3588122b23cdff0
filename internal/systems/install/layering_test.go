package install

// The layering rules of docs/architecture.md, all of them, checked on the real import graph.
//
// A system is a folder internal/<system>/ whose kinds package (internal/<system>/kinds) this
// package imports. Its adapters are that kinds package and its command packages
// (internal/<system>/<name>cmd); every other package in the folder is a product package: what a
// user deploys, which knows nothing of experiments. Everything outside the systems' folders is
// engine (runner, platforms, report, load engine, results, the cli registry, shared libraries),
// except the wiring: cmd/... and this package. The rules:
//
//  1. An engine package imports no system package, directly or not.
//  2. A product package imports neither the runner (internal/experiment/..., which holds the kind
//     SDK) nor the report (internal/report/...), directly or not.
//  3. A system imports no other system's adapters, directly or not.
//  4. The wiring reaches systems only the way it should: a binary (cmd/...) imports no system
//     package itself, its systems come through this package; the slim proxy binary
//     (cmd/continuum-proxy) links no system but the proxy's product packages (the proxy and
//     its discovery sources), and neither the runner, the report nor this package.
//  5. A product package imports no platform (internal/testbed/...): a component reaches the
//     platform it runs on through the client that platform registers with package platform
//     (platform.InstancesFor), so it runs on any platform that has one. Kubernetes' own
//     products (the cluster, whose nodes are a testbed's) are platform pieces themselves.
//
// Test imports count: a package's tests are held to the rules of the package, except the named
// end-to-end tests in testAllowed, which drive real systems where they belong, and a system's
// kinds package's tests, which may import this package to load whole scenarios (whose other
// components are other systems' kinds).

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/continuum-project/continuum/"

// testAllowed names the test imports that break a rule on purpose, and why.
var testAllowed = map[string]map[string]string{
	"internal/experiment": {
		"internal/systems/install": "the runner's end-to-end tests run real scenarios, whose kinds are the systems'",
	},
	"cmd/continuum": {
		"internal/baselines/baselinetest": "the shareddata commands' end-to-end test runs them against real etcd and Redis servers",
	},
	"internal/kubernetes/cluster": {
		"internal/baselines":              "the chart's end-to-end test runs the stream components against a real Kafka broker on the node",
		"internal/kv/kvcmd":               "the cluster's tests run its control plane on kv, whose store kvcmd registers (package clusterstore)",
		"internal/baselines/baselinescmd": "... or on etcd, whose store baselinescmd registers",
	},
	"internal/kubernetes/kubeplatform": {
		"internal/systems/install": "the platform's end-to-end test runs a scenario's real kinds on a one-node cluster",
	},
	"internal/kv/nemesis": {
		"internal/testbed": "the nemesis runs real kv members as processes of a testbed and cuts them apart with its faults",
	},
	"internal/proxy/discovery": {
		"internal/testbed": "the testbed source is tested against a real testbed's control socket",
	},
	"internal/loadgen/kvtarget": {
		"internal/kv/server": "the etcd-API client target is tested against a real continuum kv server",
		"internal/baselines": "... and against real etcd and Redis servers, started by the baselines",
	},
}

// pkg is a package of the module as go list describes it.
type pkg struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// graph is the module's packages by path relative to the module ("internal/kv/mvcc").
type graph map[string]*pkg

func loadGraph(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps,TestImports,XTestImports", module+"...")
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	g := graph{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if rel, ok := strings.CutPrefix(p.ImportPath, module); ok {
			p.ImportPath = rel
			g[rel] = &p
		}
	}
	return g
}

// rel keeps the module's own packages of paths, relative to the module.
func rel(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, ok := strings.CutPrefix(p, module); ok {
			out = append(out, r)
		}
	}
	return out
}

// layout says which system a package belongs to and what it is there.
type layout struct{ systems []string } // "internal/kv", ...

func (l layout) system(p string) string {
	for _, s := range l.systems {
		if p == s || strings.HasPrefix(p, s+"/") {
			return s
		}
	}
	return ""
}

func (l layout) isAdapter(p string) bool {
	s := l.system(p)
	if s == "" {
		return false
	}
	last := p[strings.LastIndex(p, "/")+1:]
	return p == s+"/kinds" || strings.HasPrefix(p, s+"/") && strings.HasSuffix(last, "cmd") && !strings.Contains(strings.TrimPrefix(p, s+"/"), "/")
}

func isWiring(p string) bool { return p == "internal/systems/install" || strings.HasPrefix(p, "cmd/") }

func isRunnerOrReport(p string) bool {
	return p == "internal/experiment" || strings.HasPrefix(p, "internal/experiment/") ||
		p == "internal/report" || strings.HasPrefix(p, "internal/report/")
}

// violations checks every rule on g and returns one line per broken one.
func violations(g graph, l layout) []string {
	var out []string
	check := func(from string, deps []string, how string) {
		sys := l.system(from)
		for _, d := range deps {
			dsys := l.system(d)
			switch {
			case sys == "" && dsys != "":
				out = append(out, fmt.Sprintf("rule 1: engine package %s imports system package %s%s", from, d, how))
			case sys != "" && !l.isAdapter(from) && isRunnerOrReport(d):
				out = append(out, fmt.Sprintf("rule 2: product package %s imports %s%s (only its system's kinds package may)", from, d, how))
			case sys != "" && dsys != "" && dsys != sys && l.isAdapter(d):
				out = append(out, fmt.Sprintf("rule 3: %s imports %s, an adapter of system %s%s", from, d, dsys, how))
			case sys != "" && sys != platformSystem && !l.isAdapter(from) && isPlatform(d):
				out = append(out, fmt.Sprintf("rule 5: product package %s imports the platform %s%s (a component reaches its platform through platform.InstancesFor)", from, d, how))
			}
		}
	}
	paths := make([]string, 0, len(g))
	for p := range g {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if isWiring(p) {
			out = append(out, wiringViolations(p, g[p], l)...)
			continue
		}
		check(p, rel(g[p].Deps), "")
		// Its tests: what they import directly and everything that imports.
		for _, ti := range rel(append(append([]string{}, g[p].TestImports...), g[p].XTestImports...)) {
			if ti == p || strings.HasPrefix(ti, p+"_test") {
				continue
			}
			if _, ok := testAllowed[p][ti]; ok {
				continue
			}
			if ti == "internal/systems/install" && l.system(p) != "" && p == l.system(p)+"/kinds" {
				continue // scenario tests of a system's kinds
			}
			deps := []string{ti}
			if tp, ok := g[ti]; ok {
				deps = append(deps, rel(tp.Deps)...)
			}
			check(p, deps, " (in its tests, through "+ti+")")
		}
	}
	sort.Strings(out)
	return compact(out)
}

// platformSystem is the system whose products build platforms (rule 5).
const platformSystem = "internal/kubernetes"

// isPlatform says whether p is a platform's package (rule 5).
func isPlatform(p string) bool {
	return p == "internal/testbed" || strings.HasPrefix(p, "internal/testbed/")
}

// proxyBinary is the slim proxy binary, held to the proxy's product packages (rule 4).
const proxyBinary = "cmd/continuum-proxy"

// wiringViolations checks rule 4 on a wiring package (install's own imports are checked by
// systemsOf).
func wiringViolations(p string, pk *pkg, l layout) []string {
	var out []string
	if p == proxyBinary {
		for _, d := range rel(pk.Deps) {
			sys := l.system(d)
			if sys != "" && (sys != "internal/proxy" || l.isAdapter(d)) || isRunnerOrReport(d) || d == "internal/systems/install" {
				out = append(out, fmt.Sprintf("rule 4: %s links %s: the slim proxy binary links only the proxy and its discovery", p, d))
			}
		}
	}
	if !strings.HasPrefix(p, "cmd/") {
		return out
	}
	direct := rel(pk.Imports)
	for _, ti := range rel(append(append([]string{}, pk.TestImports...), pk.XTestImports...)) {
		if _, ok := testAllowed[p][ti]; !ok && ti != p && !strings.HasPrefix(ti, p+"_test") {
			direct = append(direct, ti)
		}
	}
	for _, d := range direct {
		if l.system(d) != "" && !(p == proxyBinary && l.system(d) == "internal/proxy") {
			out = append(out, fmt.Sprintf("rule 4: %s imports system package %s: a binary gets its systems through internal/systems/install", p, d))
		}
	}
	return out
}

func compact(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// systemsOf are the systems this package installs: the folders of the kinds packages it imports.
// It may also import an installed system's command packages (internal/<system>/<name>cmd) that
// the kinds package leaves out.
func systemsOf(t *testing.T, g graph) layout {
	cmd := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var l layout
	var commands []string
	for _, p := range rel(strings.Fields(string(out))) {
		if root, ok := strings.CutSuffix(p, "/kinds"); ok {
			l.systems = append(l.systems, root)
		} else {
			commands = append(commands, p)
		}
	}
	for _, p := range commands {
		if !l.isAdapter(p) {
			t.Errorf("install imports %s: want only systems' kinds packages (internal/<system>/kinds) and their command packages (internal/<system>/<name>cmd)", p)
		}
	}
	if len(l.systems) < 7 {
		t.Fatalf("found %d systems in this package's imports (%v); want every system's kinds package", len(l.systems), l.systems)
	}
	return l
}

func TestLayering(t *testing.T) {
	g := loadGraph(t)
	l := systemsOf(t, g)
	if len(g) < 50 {
		t.Fatalf("go list found %d packages", len(g))
	}
	for _, v := range violations(g, l) {
		t.Error(v)
	}
	// Every folder under internal/ that holds a kinds package is installed.
	for p := range g {
		if root, ok := strings.CutSuffix(p, "/kinds"); ok && l.system(p) == "" {
			t.Errorf("%s has a kinds package that internal/systems/install does not import", root)
		}
	}
	// The allow-list names imports that exist: a stale entry would hide nothing but mislead.
	for from, tos := range testAllowed {
		p, ok := g[from]
		if !ok {
			t.Errorf("testAllowed: no package %s", from)
			continue
		}
		for to := range tos {
			found := false
			for _, ti := range rel(append(append([]string{}, p.TestImports...), p.XTestImports...)) {
				found = found || ti == to
			}
			if !found {
				t.Errorf("testAllowed: the tests of %s do not import %s", from, to)
			}
		}
	}
}

// TestLayeringRules runs the checker on a made-up graph that breaks each rule once (and keeps
// one of each allowed arrow), so each rule is shown to fail.
func TestLayeringRules(t *testing.T) {
	l := layout{systems: []string{"internal/kv", "internal/proxy"}}
	g := graph{
		// allowed: adapter -> runner, adapter -> own product, product -> engine, system -> other's product
		"internal/kv/kinds":        {Deps: []string{module + "internal/experiment/kind", module + "internal/kv/mvcc", module + "internal/report"}},
		"internal/kv/kvcmd":        {Deps: []string{module + "internal/cli", module + "internal/kv/server"}},
		"internal/kv/server":       {Deps: []string{module + "internal/kv/mvcc", module + "internal/spec", module + "internal/proxy"}},
		"internal/kv/mvcc":         {},
		"internal/proxy":           {},
		"internal/proxy/kinds":     {Deps: []string{module + "internal/experiment/kind"}, XTestImports: []string{module + "internal/systems/install"}},
		"cmd/continuum":            {Imports: []string{module + "internal/systems/install"}, Deps: []string{module + "internal/systems/install", module + "internal/kv/kinds"}},
		"cmd/continuum-proxy":      {Imports: []string{module + "internal/proxy"}, Deps: []string{module + "internal/proxy", module + "internal/spec"}},
		"internal/systems/install": {Deps: []string{module + "internal/kv/kinds", module + "internal/proxy/kinds"}},
		// rule 1: an engine package reaches a system through another engine package
		"internal/loadgen/kvtarget": {Deps: []string{module + "internal/kv/mvcc"}},
		// rule 1 in tests only
		"internal/report": {XTestImports: []string{module + "internal/proxy/kinds"}},
		// rule 2: a product package imports the kind SDK and the report
		"internal/proxy/pool": {Deps: []string{module + "internal/experiment/kind", module + "internal/report/chart"}},
		// rule 3: one system's adapter imports another's
		"internal/proxy/proxycmd": {Deps: []string{module + "internal/kv/kvcmd"}},
		// rule 5: a product package imports a platform (in its tests too)
		"internal/proxy/discovery": {Deps: []string{module + "internal/spec"}, TestImports: []string{module + "internal/testbed/fabric"}},
		"internal/kv/replication":  {Deps: []string{module + "internal/testbed"}},
		// rule 4: a binary imports a system itself (in its tests too); a slim one links more
		"cmd/continuum-kv":     {Imports: []string{module + "internal/kv/server"}, XTestImports: []string{module + "internal/proxy"}},
		"cmd/continuum-proxy2": {Imports: []string{module + "internal/proxy"}}, // only cmd/continuum-proxy may
	}
	gp := *g["cmd/continuum-proxy"]
	gp.Deps = append(gp.Deps, module+"internal/proxy/kinds")
	g["cmd/continuum-proxy"] = &gp
	got := strings.Join(violations(g, l), "\n")
	for _, want := range []string{
		"rule 1: engine package internal/loadgen/kvtarget imports system package internal/kv/mvcc",
		"rule 1: engine package internal/report imports system package internal/proxy/kinds (in its tests, through internal/proxy/kinds)",
		"rule 2: product package internal/proxy/pool imports internal/experiment/kind",
		"rule 2: product package internal/proxy/pool imports internal/report/chart",
		"rule 3: internal/proxy/proxycmd imports internal/kv/kvcmd, an adapter of system internal/kv",
		"rule 4: cmd/continuum-kv imports system package internal/kv/server",
		"rule 4: cmd/continuum-kv imports system package internal/proxy",
		"rule 4: cmd/continuum-proxy links internal/proxy/kinds",
		"rule 4: cmd/continuum-proxy2 imports system package internal/proxy",
		"rule 5: product package internal/kv/replication imports the platform internal/testbed",
		"rule 5: product package internal/proxy/discovery imports the platform internal/testbed/fabric (in its tests, through internal/testbed/fabric)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q; got:\n%s", want, got)
		}
	}
	if n := len(violations(g, l)); n != 11 {
		t.Errorf("%d violations, want exactly the 11 planted:\n%s", n, got)
	}
}
