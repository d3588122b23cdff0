package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runBinaries runs, one at a time and in the order given, the test binaries of pkgs that
// `go test -c -o DIR/` built into dir (named by the last element of the import path, as go
// test names them), each in its package's directory as go test runs it, through `go tool
// test2json` (the events go test -json gives), with testArgs after its own -test.v and
// -test.paniconexit0. It returns 1 if any failed or had no binary, else 0.
//
// It is for a pass whose packages must run one at a time (make test's serial pass): `go test
// -p 1` links each package's binary only after the previous one's tests ended, so the links
// (about 20 s of that pass) wait in line with the tests; built beforehand, beside other work,
// they do not.
func runBinaries(s *stream, w *bufio.Writer, gocmd, dir string, pkgs, testArgs []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	list, err := listPackages(gocmd, pkgs)
	if err != nil {
		fmt.Fprintln(w, "testtime:", err)
		return 1
	}
	status := 0
	for _, p := range list {
		if !p.tests {
			s.synth(event{Action: "output", Package: p.path, Output: "?   \t" + p.path + "\t[no test files]\n"})
			s.synth(event{Action: "skip", Package: p.path})
			continue
		}
		bin := filepath.Join(dir, path.Base(p.path)+".test")
		if _, err := os.Stat(bin); err != nil {
			s.synth(event{Action: "output", Package: p.path, Output: fmt.Sprintf("FAIL\t%s\t[no test binary: %v]\n", p.path, err)})
			s.synth(event{Action: "fail", Package: p.path})
			status = 1
			continue
		}
		args := append([]string{"tool", "test2json", "-p", p.path, "-t", bin, "-test.v=test2json", "-test.paniconexit0"}, testArgs...)
		cmd := exec.Command(gocmd, args...)
		cmd.Dir = p.dir
		cmd.Env = append(os.Environ(), "PWD="+p.dir) // as go test sets it
		exit := streamCommand(s, w, cmd)
		// go test's closing line for a package that passed; test2json leaves it to go test.
		if r := s.pkgs[p.path]; exit == 0 && r != nil && r.Result == "ok" {
			fmt.Fprintf(s.out, "ok  \t%s\t%.3fs\n", p.path, r.Elapsed.Seconds())
		} else {
			status = 1
		}
	}
	return status
}

type listedPackage struct {
	path, dir string
	tests     bool // has test files
}

// listPackages resolves patterns as go test would (in order, each package once).
func listPackages(gocmd string, patterns []string) ([]listedPackage, error) {
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{if or .TestGoFiles .XTestGoFiles}}tests{{end}}"}, patterns...)
	var stderr bytes.Buffer
	cmd := exec.Command(gocmd, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	var list []listedPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		list = append(list, listedPackage{path: f[0], dir: f[1], tests: f[2] == "tests"})
	}
	return list, nil
}

// synth feeds the stream an event of testtime's own (saved with the rest, when it saves).
func (s *stream) synth(e event) {
	e.Time = time.Now()
	b, _ := json.Marshal(e)
	_ = s.read(bytes.NewReader(append(b, '\n')))
}
