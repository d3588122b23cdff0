package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
// test names them), as go test runs them: each in its package's directory with $GOROOT/bin first
// in PATH, with -test.v=test2json, -test.paniconexit0 and testArgs, its output turned into
// events by `go tool test2json`. It returns 1 if any failed or had no binary, else 0.
//
// As go test does, it gives a binary -test.timeout (from testArgs; default 10m) plus a minute
// before killing it, and a binary that exited WaitDelay (a tenth of the timeout, at least 5 s)
// to close its output (a process it left behind holding the pipe fails the package). An
// interrupt (SIGINT, SIGTERM) ends the binary running and starts no other.
//
// It is for a pass whose packages must run one at a time (make test's serial pass): `go test
// -p 1` links each package's binary only after the previous one's tests ended, so the links
// (about 20 s of that pass) wait in line with the tests; built beforehand, beside other work,
// they do not.
func runBinaries(s *stream, w *bufio.Writer, gocmd, dir string, pkgs, testArgs []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	list, err := listPackages(gocmd, pkgs)
	if err != nil {
		fmt.Fprintln(w, "testtime:", err)
		return 1
	}
	goroot, err := exec.Command(gocmd, "env", "GOROOT").Output()
	if err != nil {
		fmt.Fprintln(w, "testtime: go env GOROOT:", err)
		return 1
	}
	pathEnv := "PATH=" + filepath.Join(strings.TrimSpace(string(goroot)), "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	timeout := testTimeout(testArgs)
	status := 0
	for _, p := range list {
		if ctx.Err() != nil {
			fmt.Fprintln(w, "testtime: interrupted: the packages after", s.name(p.path), "did not run")
			return 1
		}
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
		args := append([]string{"-test.v=test2json", "-test.paniconexit0"}, testArgs...)
		if err := runPackage(ctx, s, w, gocmd, p, bin, args, []string{"PWD=" + p.dir, pathEnv}, timeout); err != nil {
			status = 1
		}
	}
	return status
}

// runPackage runs one package's test binary into the stream through a test2json converter and
// returns an error when the package did not pass. A binary that ended without saying how its
// package did (a panic, os.Exit, a kill) gets the package's failure from here, with why.
func runPackage(ctx context.Context, s *stream, w io.Writer, gocmd string, p listedPackage, bin string, args, env []string, timeout time.Duration) error {
	conv := exec.Command(gocmd, "tool", "test2json", "-t", "-p", p.path)
	// Its own process group: a terminal's Ctrl-C ends the test binary, not the converter,
	// which then still reports what the binary said.
	conv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	conv.Stderr = os.Stderr
	in, err := conv.StdinPipe()
	if err != nil {
		return err
	}
	out, err := conv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := conv.Start(); err != nil {
		fmt.Fprintln(w, "testtime:", err)
		return err
	}
	read := make(chan error, 1)
	go func() { read <- s.read(out) }()

	tctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	test := exec.CommandContext(tctx, bin, args...)
	test.Dir, test.Env = p.dir, append(os.Environ(), env...)
	test.Stdout, test.Stderr = in, in
	test.WaitDelay = max(5*time.Second, timeout/10)
	start := time.Now()
	runErr := test.Run()
	elapsed := time.Since(start)
	in.Close()
	readErr := <-read
	_ = conv.Wait()
	if readErr != nil {
		fmt.Fprintln(w, "testtime: reading the stream:", readErr)
	}
	r := s.pkgs[p.path]
	switch {
	case r == nil || r.Result == "":
		why := "the test binary ended without a result"
		if runErr != nil {
			why = runErr.Error()
		}
		if ctx.Err() != nil {
			why += " (interrupted)"
		}
		s.synth(event{Action: "output", Package: p.path, Output: fmt.Sprintf("FAIL\t%s\t%.3fs\t[%s]\n", p.path, elapsed.Seconds(), why)})
		s.synth(event{Action: "fail", Package: p.path, Elapsed: ptr(elapsed.Seconds())})
		return fmt.Errorf("%s: %s", p.path, why)
	case runErr != nil || readErr != nil:
		if r.Result == "ok" { // said PASS, then failed to exit cleanly (WaitDelay, a kill)
			s.synth(event{Action: "output", Package: p.path, Output: fmt.Sprintf("FAIL\t%s\t[%v after its tests passed]\n", p.path, runErr)})
			r.Result, s.failed = "FAIL", true
		}
		return fmt.Errorf("%s: %v", p.path, runErr)
	case r.Result == "ok":
		// go test's closing line for a package that passed; test2json leaves it to go test.
		fmt.Fprintf(s.out, "ok  \t%s\t%.3fs\n", p.path, r.Elapsed.Seconds())
		return nil
	case r.Result == "skip":
		return nil
	}
	return fmt.Errorf("%s: %s", p.path, r.Result)
}

func ptr(v float64) *float64 { return &v }

// testTimeout is the -test.timeout among args (go test's default, 10 minutes, without one).
func testTimeout(args []string) time.Duration {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "-test.timeout="); ok {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				return d
			}
		}
	}
	return 10 * time.Minute
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
