package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	graph := flag.String("actiongraph", "", "the file go test's -debug-actiongraph wrote: adds compile and link times (read after the command ends)")
	title := flag.String("title", "go test", "the table's heading (which pass this is)")
	top := flag.Int("top", 0, "print only the N slowest packages (0: all)")
	trim := flag.String("trim", "", "prefix left off package names (default: the module path of ./go.mod)")
	save := flag.String("json", "", "also write the raw -json stream to this file (to compare runs later)")
	bin := flag.String("bin", "", "run the test binaries `go test -c -o DIR/` built in this directory, one at a time, for the packages given as arguments (instead of a command)")
	gocmd := flag.String("go", "go", "the go command (with -bin)")
	var testArgs stringsFlag
	flag.Var(&testArgs, "arg", "a flag for every test binary, such as -test.timeout=30m (with -bin; repeat for more)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: testtime [flags] -- go test -json [...]\n       testtime [flags] -bin DIR [-arg FLAG]... -- PACKAGE...\n       testtime [flags] < go-test.json\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *trim == "" {
		*trim = modulePrefix("go.mod")
	}
	var raw io.Writer
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtime:", err)
			os.Exit(2)
		}
		raw = f
	}
	var status int
	if *bin != "" {
		status = runPrebuilt(os.Stdout, raw, *gocmd, *bin, flag.Args(), testArgs, *graph, *title, *top, *trim)
	} else {
		status = run(os.Stdout, raw, flag.Args(), *graph, *title, *top, *trim)
	}
	if raw != nil {
		raw.(*os.File).Close()
	}
	os.Exit(status)
}

// run reads the command's stdout (or this process's stdin without a command), prints as go test
// would and then the table, and returns the exit status: the command's, or 1 if the stream
// showed a failure.
// A non-nil raw gets a copy of the stream as it was read.
func run(out, raw io.Writer, args []string, graph, title string, top int, trim string) int {
	w := bufio.NewWriter(out)
	defer w.Flush()
	s := newStream(lineFlusher{w}, trim)
	s.raw = raw
	start := time.Now()
	status := 0
	if len(args) == 0 {
		if err := s.read(os.Stdin); err != nil {
			fmt.Fprintln(w, "testtime: reading the stream:", err)
			status = 1
		}
		if s.failed {
			status = 1
		}
	} else {
		status = runCommand(s, w, args)
	}
	wall := time.Since(start)
	if len(args) == 0 && !s.first.IsZero() {
		wall = s.last.Sub(s.first) // a saved stream: from its first event to its last
	}
	table(w, s, readCost(w, graph), title, wall, top)
	return status
}

// readCost reads the build's action graph, if there is one; nil without.
func readCost(w io.Writer, graph string) *buildCost {
	if graph == "" {
		return nil
	}
	c, err := readActionGraph(graph)
	if err != nil {
		fmt.Fprintf(w, "testtime: no build times: %v\n", err)
		return nil
	}
	return c
}

// runPrebuilt is run for test binaries built beforehand (runBinaries): the table's build
// columns come from the build's action graph, if given.
func runPrebuilt(out, raw io.Writer, gocmd, dir string, pkgs, testArgs []string, graph, title string, top int, trim string) int {
	w := bufio.NewWriter(out)
	defer w.Flush()
	s := newStream(lineFlusher{w}, trim)
	s.raw = raw
	start := time.Now()
	status := runBinaries(s, w, gocmd, dir, pkgs, testArgs)
	table(w, s, readCost(w, graph), title, time.Since(start), top)
	return status
}

// stringsFlag is a flag that may be given more than once.
type stringsFlag []string

func (f *stringsFlag) String() string     { return strings.Join(*f, " ") }
func (f *stringsFlag) Set(v string) error { *f = append(*f, v); return nil }

// runCommand runs args with its stdout read as the stream and its stderr passed through, and
// returns its exit status. An interrupt reaches the command (same process group) and testtime
// waits for it, so the table shows what had finished.
func runCommand(s *stream, w *bufio.Writer, args []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	return streamCommand(s, w, exec.Command(args[0], args[1:]...))
}

// streamCommand runs cmd with its stdout read as the stream, its stdin and stderr this
// process's, and returns its exit status (1 if it could not start, was killed by a signal or
// its stream could not be read).
func streamCommand(s *stream, w *bufio.Writer, cmd *exec.Cmd) int {
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(w, "testtime:", err)
		return 1
	}
	readErr := s.read(stdout)
	err = cmd.Wait()
	if readErr != nil {
		fmt.Fprintln(w, "testtime: reading the stream:", readErr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if ee.ExitCode() < 0 {
			return 1 // killed by a signal
		}
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintln(w, "testtime:", err)
		return 1
	case readErr != nil:
		return 1
	}
	return 0
}

// table prints the packages slowest first, then the totals and, with an action graph, the
// build's.
func table(w io.Writer, s *stream, cost *buildCost, title string, wall time.Duration, top int) {
	res := s.results()
	sort.SliceStable(res, func(i, j int) bool { return res[i].Elapsed > res[j].Elapsed })
	var sum time.Duration
	tests, failed := 0, 0
	for _, p := range res {
		sum += p.Elapsed
		tests += p.Tests
		if p.Result == "FAIL" {
			failed++
		}
	}
	fmt.Fprintf(w, "\n%s: %d packages (%d failed), %d tests, %s wall, %s summed over packages\n",
		title, len(res), failed, tests, secs(wall), secs(sum))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "time\tresult\ttests\tsubtests\t"
	if cost != nil {
		header += "compile\tlink\t"
	}
	fmt.Fprintln(tw, header+" package")
	for i, p := range res {
		if top > 0 && i >= top {
			fmt.Fprintf(tw, "...\t%d more\t\t\t\n", len(res)-top)
			break
		}
		if p.Result == "skip" && p.Tests == 0 && p.Elapsed == 0 {
			continue // no test files: nothing to time
		}
		row := fmt.Sprintf("%s\t%s\t%d\t%d\t", secs(p.Elapsed), p.Result, p.Tests, p.Subtests)
		if cost != nil {
			row += fmt.Sprintf("%s\t%s\t", secs(cost.PerPackage[p.Path]), secs(cost.LinkPackage[p.Path]))
		}
		fmt.Fprintln(tw, row+" "+s.name(p.Path))
	}
	tw.Flush()
	if cost != nil {
		fmt.Fprintf(w, "build: %d packages compiled (%s of compiler CPU, %s summed wall), %d test binaries linked (%s), %d vet runs (%s); first compile to last link %s\n",
			cost.Compiles, secs(cost.CompileCPU), secs(cost.CompileReal), cost.Links, secs(cost.LinkReal),
			cost.Vets, secs(cost.VetReal), secs(cost.Last.Sub(cost.First)))
		fmt.Fprintln(w, "  (compile: the package's own compiles — itself, its test variant, its tests, the test main — not its dependencies')")
	}
	for _, p := range res {
		if p.Result != "FAIL" {
			continue
		}
		why := strings.Join(p.Failed, ", ")
		if p.FailedBuild != "" {
			why = "build failed: " + s.name(p.FailedBuild)
		} else if why == "" {
			why = "no test failed: see the package's output above"
		}
		fmt.Fprintf(w, "FAIL %s: %s\n", s.name(p.Path), why)
	}
	if u := s.unfinished(); len(u) > 0 {
		fmt.Fprintf(w, "started but never ended: %s\n", strings.Join(u, " "))
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// modulePrefix is "<module path>/" from a go.mod, or "" without one.
func modulePrefix(gomod string) string {
	raw, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`) + "/"
		}
	}
	return ""
}

// lineFlusher flushes after every write, so that a CI log shows each package as it ends.
type lineFlusher struct{ w *bufio.Writer }

func (l lineFlusher) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if err == nil {
		err = l.w.Flush()
	}
	return n, err
}
