package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stream with a package that passed, one whose test failed (with a passing test whose output
// must not show), one that panicked mid-test, one whose build failed and one with no tests.
const sample = `{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"m/a"}
{"Time":"2026-01-01T10:00:00Z","Action":"run","Package":"m/a","Test":"TestA"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/a","Test":"TestA","Output":"quiet log of a passing test\n"}
{"Time":"2026-01-01T10:00:01Z","Action":"pass","Package":"m/a","Test":"TestA","Elapsed":1}
{"Time":"2026-01-01T10:00:01Z","Action":"output","Package":"m/a","Output":"PASS\n"}
{"Time":"2026-01-01T10:00:01Z","Action":"output","Package":"m/a","Output":"ok  \tm/a\t1.5s\n"}
{"Time":"2026-01-01T10:00:01Z","Action":"pass","Package":"m/a","Elapsed":1.5}
{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"m/b"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/b","Test":"TestOK","Output":"=== RUN   TestOK\nhidden: TestOK passed\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"pass","Package":"m/b","Test":"TestOK","Elapsed":0}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/b","Test":"TestBad/sub","Output":"    b_test.go:9: want 2, got 3\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/b","Test":"TestBad/sub","Output":"--- FAIL: TestBad/sub (0.00s)\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"fail","Package":"m/b","Test":"TestBad/sub","Elapsed":0}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/b","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"fail","Package":"m/b","Test":"TestBad","Elapsed":0}
{"Time":"2026-01-01T10:00:03Z","Action":"output","Package":"m/b","Output":"FAIL\tm/b\t3.0s\n"}
{"Time":"2026-01-01T10:00:03Z","Action":"fail","Package":"m/b","Elapsed":3}
{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"m/c"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/c","Test":"TestHang","Output":"panic: test timed out after 1s\n"}
{"Time":"2026-01-01T10:00:09Z","Action":"output","Package":"m/c","Output":"FAIL\tm/c\t9.0s\n"}
{"Time":"2026-01-01T10:00:09Z","Action":"fail","Package":"m/c","Elapsed":9}
{"ImportPath":"m/d [m/d.test]","Action":"build-output","Output":"d/d_test.go:3:1: syntax error\n"}
{"ImportPath":"m/d [m/d.test]","Action":"build-fail"}
{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"m/d"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/d","Output":"FAIL\tm/d [build failed]\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"fail","Package":"m/d","Elapsed":0,"FailedBuild":"m/d [m/d.test]"}
{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"m/e"}
{"Time":"2026-01-01T10:00:00Z","Action":"output","Package":"m/e","Output":"?   \tm/e\t[no test files]\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"skip","Package":"m/e","Elapsed":0}
not json: the go command's own line
`

func TestStreamPrintsWhatGoTestWould(t *testing.T) {
	var out bytes.Buffer
	s := newStream(&out, "m/")
	if err := s.read(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"ok  \tm/a\t1.5s\n",
		"    b_test.go:9: want 2, got 3\n--- FAIL: TestBad/sub (0.00s)\n--- FAIL: TestBad (0.00s)\n",
		"FAIL\tm/b\t3.0s\n",
		"--- still running when c ended: TestHang\npanic: test timed out after 1s\n",
		"FAIL\tm/c\t9.0s\n",
		"d/d_test.go:3:1: syntax error\n",
		"FAIL\tm/d [build failed]\n",
		"?   \tm/e\t[no test files]\n",
		"not json: the go command's own line\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; got:\n%s", want, got)
		}
	}
	for _, hidden := range []string{"quiet log of a passing test", "hidden: TestOK passed", "PASS\n"} {
		if strings.Contains(got, hidden) {
			t.Errorf("output shows %q, the output of what passed; got:\n%s", hidden, got)
		}
	}
	if !s.failed {
		t.Error("the stream's failures went unnoticed")
	}
	res := map[string]*pkgResult{}
	for _, p := range s.results() {
		res[p.Path] = p
	}
	if len(res) != 5 {
		t.Fatalf("%d packages ended, want 5", len(res))
	}
	if p := res["m/b"]; p.Result != "FAIL" || p.Tests != 2 || p.Subtests != 1 || strings.Join(p.Failed, ",") != "TestBad/sub,TestBad" || p.Elapsed != 3*time.Second {
		t.Errorf("m/b: %+v", p)
	}
	if p := res["m/d"]; p.FailedBuild != "m/d [m/d.test]" {
		t.Errorf("m/d: %+v", p)
	}
}

func TestTableSlowestFirst(t *testing.T) {
	var out bytes.Buffer
	s := newStream(&bytes.Buffer{}, "m/")
	if err := s.read(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	cost := costOf([]action{
		{Mode: "build", Package: "m/c", CmdReal: 2 * time.Second, CmdUser: 3 * time.Second},
		{Mode: "build", Package: "m/c_test", CmdReal: time.Second, CmdUser: time.Second},
		{Mode: "build", Package: "m/dep", CmdReal: time.Second, CmdUser: time.Second},
		{Mode: "build", Package: "m/cached"}, // in the build cache: not counted
		{Mode: "link", Package: "m/c.test", CmdReal: 4 * time.Second},
		{Mode: "vet", Package: "m/c", CmdReal: time.Second},
	})
	table(&out, s, cost, "pass", 10*time.Second, 0)
	got := out.String()
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[1], "pass: 5 packages (3 failed), 3 tests, 10.0s wall, 13.5s summed over packages") {
		t.Errorf("summary line %q", lines[1])
	}
	// Rows: slowest first, the package without test files left out.
	var order []string
	for _, l := range lines[3:] {
		if f := strings.Fields(l); len(f) == 7 {
			order = append(order, f[6])
		}
	}
	if strings.Join(order, " ") != "c b a d" {
		t.Errorf("rows %q, want c b a d; table:\n%s", order, got)
	}
	for _, want := range []string{
		"9.0s    FAIL      0         0     3.0s  4.0s c\n",
		"build: 3 packages compiled (5.0s of compiler CPU, 4.0s summed wall), 1 test binaries linked (4.0s), 1 vet runs (1.0s)",
		"FAIL b: TestBad/sub, TestBad\n",
		"FAIL c: no test failed: see the package's output above\n",
		"FAIL d: build failed: d [m/d.test]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q; got:\n%s", want, got)
		}
	}
}

// The exit status is the command's, whatever its stream said.
func TestRunKeepsTheCommandsStatus(t *testing.T) {
	dir := t.TempDir()
	stream := filepath.Join(dir, "stream.json")
	if err := os.WriteFile(stream, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		want   int
	}{
		{"cat " + stream + "; exit 0", 0},
		{"cat " + stream + "; exit 3", 3},
		{"exit 2", 2},
	} {
		var out bytes.Buffer
		if got := run(&out, nil, []string{"sh", "-c", c.script}, "", "pass", 0, "m/"); got != c.want {
			t.Errorf("%q: status %d, want %d; output:\n%s", c.script, got, c.want, out.String())
		}
	}
	var out, raw bytes.Buffer
	if got := run(&out, &raw, []string{"cat", stream}, "", "pass", 0, "m/"); got != 0 || raw.String() != sample {
		t.Errorf("status %d; the raw copy differs from the stream:\n%s", got, raw.String())
	}
	if got := run(&out, nil, []string{filepath.Join(dir, "no-such-command")}, "", "pass", 0, "m/"); got != 1 {
		t.Errorf("a command that does not start: status %d, want 1", got)
	}
}

func TestModulePrefix(t *testing.T) {
	gomod := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(gomod, []byte("// c\nmodule example.com/x\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := modulePrefix(gomod); got != "example.com/x/" {
		t.Errorf("modulePrefix = %q", got)
	}
	if got := modulePrefix(filepath.Join(t.TempDir(), "none")); got != "" {
		t.Errorf("modulePrefix without a go.mod = %q", got)
	}
}

// TestRunPrebuiltBinaries builds a module's test binaries with go test -c and runs them as make
// test's serial pass does: each in its package's directory (a test reads a file beside it), the
// flags given to every binary, a package without tests and one whose binary is missing reported,
// a binary that exits mid-test failing its package with the exit status, a failing test's output
// printed and the status 1.
func TestRunPrebuiltBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":          "module m\n\ngo 1.22\n",
		"a/a.go":          "package a\n",
		"a/here.txt":      "beside a\n",
		"a/a_test.go":     "package a\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestReadsBeside(t *testing.T) {\n\tif _, err := os.ReadFile(\"here.txt\"); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n\nfunc TestSkipped(t *testing.T) { t.Fatal(\"skipped by the flag\") }\n",
		"b/b.go":          "package b\n",
		"b/b_test.go":     "package b\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) { t.Error(\"want 2, got 3\") }\n",
		"c/c.go":          "package c\n",
		"d/d.go":          "package d\n",
		"d/d_test.go":     "package d\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestExits(t *testing.T) { os.Exit(3) }\n",
		"nobin/nobin.go":  "package nobin\n",
		"nobin/n_test.go": "package nobin\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {}\n",
	}
	for name, text := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bins := t.TempDir()
	build := exec.Command("go", "test", "-c", "-o", bins+"/", "./a", "./b", "./c", "./d")
	build.Dir = mod
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	t.Chdir(mod) // go list resolves the patterns in the module, as make test does
	var out bytes.Buffer
	got := runPrebuilt(&out, nil, "go", bins, []string{"./a", "./b", "./c", "./d", "./nobin"}, []string{"-test.skip=^TestSkipped$"}, "", "pass", 0, "m/")
	text := out.String()
	if got != 1 {
		t.Errorf("status %d, want 1 (b failed, d exited, nobin has no binary)", got)
	}
	for _, want := range []string{"ok  \tm/a\t", "want 2, got 3", "?   \tm/c\t[no test files]", "FAIL\tm/nobin\t[no test binary",
		"FAIL\tm/d\t", "exit status 3", "pass: 5 packages (3 failed)", "FAIL b: TestBad"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "skipped by the flag") {
		t.Errorf("-test.skip did not reach the binary:\n%s", text)
	}
}
