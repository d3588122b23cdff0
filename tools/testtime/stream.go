package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json's TestEvent, plus the build events go test
// adds since Go 1.24: build-output and build-fail, keyed by ImportPath).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     *float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// pkgResult is what the stream said about one package.
type pkgResult struct {
	Path    string
	Result  string        // "ok", "FAIL", "skip" (no test files or no tests ran)
	Elapsed time.Duration // go test's own figure for the package (its test binary's run)
	Start   time.Time     // when its test binary started (the "start" event)
	// Tests counts top-level tests that ended; Subtests the rest. Failed names the failed ones.
	Tests, Subtests int
	Failed          []string
	FailedBuild     string // the package whose build failed, if that is why it failed
}

// stream reads go test's events and prints, as the run goes, what go test without -json would
// print for them: each package's closing line, the build output, and the output of whatever
// failed. It keeps every test's output until the test ends: dropped when it passed, printed
// when it failed.
type stream struct {
	out  io.Writer
	trim string    // module path prefix left off the package names
	raw  io.Writer // if not nil, gets every line read

	pkgs   map[string]*pkgResult
	order  []string
	output map[key][]string // pending output by package and test ("" is the package's own)
	first  time.Time        // time of the first event
	last   time.Time
	failed bool // anything failed: a test, a package, a build
}

type key struct{ pkg, test string }

func newStream(out io.Writer, trim string) *stream {
	return &stream{out: out, trim: trim, pkgs: map[string]*pkgResult{}, output: map[key][]string{}}
}

// read consumes r to its end. Lines that are not events (the go command's own messages) are
// printed as they are.
func (s *stream) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if s.raw != nil {
			if _, err := fmt.Fprintf(s.raw, "%s\n", line); err != nil {
				return err
			}
		}
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(s.out, "%s\n", line)
			continue
		}
		s.handle(e)
	}
	return sc.Err()
}

func (s *stream) pkg(path string) *pkgResult {
	p, ok := s.pkgs[path]
	if !ok {
		p = &pkgResult{Path: path}
		s.pkgs[path] = p
		s.order = append(s.order, path)
	}
	return p
}

func (s *stream) name(path string) string { return strings.TrimPrefix(path, s.trim) }

func (s *stream) handle(e event) {
	if !e.Time.IsZero() {
		if s.first.IsZero() || e.Time.Before(s.first) {
			s.first = e.Time
		}
		if e.Time.After(s.last) {
			s.last = e.Time
		}
	}
	switch e.Action {
	case "build-output":
		// The compiler's and vet's messages: go test prints them on stderr as they come.
		fmt.Fprint(s.out, e.Output)
		return
	case "build-fail":
		s.failed = true
		return
	}
	if e.Package == "" {
		return
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "start":
		s.pkg(e.Package).Start = e.Time
	case "run", "pause", "cont", "bench":
	case "output":
		s.output[k] = append(s.output[k], e.Output)
	case "pass", "skip", "fail":
		if e.Test != "" {
			s.testEnded(e)
		} else {
			s.packageEnded(e)
		}
	}
}

func (s *stream) testEnded(e event) {
	p := s.pkg(e.Package)
	if strings.Contains(e.Test, "/") {
		p.Subtests++
	} else {
		p.Tests++
	}
	k := key{e.Package, e.Test}
	if e.Action == "fail" {
		s.failed = true
		p.Failed = append(p.Failed, e.Test)
		for _, o := range s.output[k] {
			fmt.Fprint(s.out, o)
		}
	}
	delete(s.output, k)
}

func (s *stream) packageEnded(e event) {
	p := s.pkg(e.Package)
	if e.Elapsed != nil {
		p.Elapsed = time.Duration(*e.Elapsed * float64(time.Second))
	}
	own := s.output[key{e.Package, ""}]
	delete(s.output, key{e.Package, ""})
	switch e.Action {
	case "pass":
		p.Result = "ok"
	case "skip":
		p.Result = "skip"
	case "fail":
		s.failed = true
		p.Result, p.FailedBuild = "FAIL", e.FailedBuild
		// Tests still running when the package ended (a panic, a timeout, os.Exit): their
		// output says why, so it goes out with the package's own.
		for k, lines := range s.output {
			if k.pkg != e.Package {
				continue
			}
			fmt.Fprintf(s.out, "--- still running when %s ended: %s\n", s.name(e.Package), k.test)
			for _, o := range lines {
				fmt.Fprint(s.out, o)
			}
			delete(s.output, k)
		}
		for _, o := range own {
			fmt.Fprint(s.out, o)
		}
		return
	}
	// A package that passed: go test's closing line alone ("ok  \tpkg\t1.2s", "?   \tpkg\t[no
	// test files]"), as go test prints it without -v.
	for _, o := range own {
		if strings.HasPrefix(o, "ok  ") || strings.HasPrefix(o, "?   ") {
			fmt.Fprint(s.out, o)
		}
	}
	for k := range s.output {
		if k.pkg == e.Package {
			delete(s.output, k)
		}
	}
}

// results are the packages the stream ended, in the order they ended.
func (s *stream) results() []*pkgResult {
	var out []*pkgResult
	for _, path := range s.order {
		if p := s.pkgs[path]; p.Result != "" {
			out = append(out, p)
		}
	}
	return out
}

// unfinished are the packages that started and never ended (the stream was cut).
func (s *stream) unfinished() []string {
	var out []string
	for _, path := range s.order {
		if s.pkgs[path].Result == "" {
			out = append(out, s.name(path))
		}
	}
	return out
}
