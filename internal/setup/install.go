package setup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/tools"
)

// Script is the clone's setup script, relative to the clone.
const Script = "scripts/setup.sh"

// FindClone is the Continuum clone holding the setup script: the nearest directory above the
// running executable (symlinks resolved: bin/continuum of a clone), else above the working
// directory, that has scripts/setup.sh beside a go.mod of this module. The executable's own
// clone comes first: its script is the one that goes with this binary, so a directory the user
// happens to stand in does not choose what runs as root. Only a binary that belongs to no clone
// (copied to /usr/local/bin) falls back to the working directory: there the clone the user
// stands in is the one they mean, as with `make setup` run in it.
func FindClone() (string, error) {
	f := tools.Default()
	var starts []string
	if f.Exe != "" {
		if r, err := filepath.EvalSymlinks(f.Exe); err == nil {
			starts = append(starts, filepath.Dir(r))
		}
	}
	if f.WD != "" {
		starts = append(starts, f.WD)
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if isClone(d) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("no Continuum clone (a directory with %s) above %s: stacks are installed from a clone; run this clone's bin/continuum, or from inside it", Script, strings.Join(starts, " or "))
}

func isClone(d string) bool {
	b, err := os.ReadFile(filepath.Join(d, "go.mod"))
	if err != nil || !strings.HasPrefix(string(b), "module github.com/continuum-project/continuum\n") {
		return false
	}
	_, err = os.Stat(filepath.Join(d, Script))
	return err == nil
}

// Installer installs stacks.
type Installer struct {
	Root  string    // the clone (FindClone)
	Out   io.Writer // what the steps print, and the progress line
	Cache string    // the setup cache (tools.CacheDir())
	// Interactive rewrites one progress line in place (Out is a terminal); otherwise a progress
	// line is printed every ProgressEvery.
	Interactive   bool
	ProgressEvery time.Duration // 0: 30 s (1 s when Interactive)
	Checker       Checker
	// Apt runs apt-get with args; nil: apt-get itself. Tests replace it.
	Apt func(ctx context.Context, args ...string) error
}

// NewInstaller is an Installer of this host for the clone at root.
func NewInstaller(root string, out io.Writer, interactive bool) *Installer {
	return &Installer{Root: root, Out: out, Cache: tools.CacheDir(), Interactive: interactive, Checker: DefaultChecker()}
}

// Plan describes what installing stacks would do, one line each, without doing it.
func (in *Installer) Plan(stacks []Stack) []string {
	var out []string
	for _, st := range in.Checker.Status(stacks) {
		if st.Installed() {
			out = append(out, fmt.Sprintf("%s: installed", st.Name))
			continue
		}
		est := in.estimate(st.Stack)
		out = append(out, fmt.Sprintf("%s: would install %s (~%s, ~%s %s)", st.Name, st.Missing(), HumanBytes(st.Size), humanDuration(est.Time), est.where()))
	}
	return out
}

// Install installs each stack: its missing Debian packages, then the script's step (which, for a
// stack already built from the clone's pins, only checks and links). A stack that is still
// incomplete afterwards is an error: never silently half.
func (in *Installer) Install(ctx context.Context, stacks []Stack) error {
	aptUpdated := false
	// The script's step runs even for a stack that looks installed: only the script knows the
	// cache keys (the hash of the pins, the Go or Python release), so after a pull that bumps a
	// pin, the clone's .tools still links the old build and only the step rebuilds it. On an
	// up-to-date stack it only checks and links, in seconds.
	local := in.Checker
	local.Finder = tools.Finder{WD: in.Root}
	linked := local.Status(stacks)
	for i, st := range in.Checker.Status(stacks) {
		est := in.estimate(st.Stack)
		switch {
		case st.Installed() && linked[i].Installed():
			where := strings.Join(st.Where, ", ")
			if where == "" {
				where = "Debian packages " + strings.Join(st.Apt, " ")
			}
			fmt.Fprintf(in.Out, "setup %s: installed (%s); checking it against the clone's pins\n", st.Name, where)
		case st.Installed():
			fmt.Fprintf(in.Out, "setup %s: in the cache (%s); linking it into %s/.tools\n", st.Name, strings.Join(st.Where, ", "), in.Root)
		default:
			fmt.Fprintf(in.Out, "setup %s: installing %s: %s (~%s, ~%s %s)\n", st.Name, st.Summary, st.Missing(),
				HumanBytes(st.Size), humanDuration(est.Time), est.where())
		}
		start := time.Now()
		p := in.startProgress(st.Name, start, est)
		err := in.installApt(ctx, st.MissingApt, &aptUpdated)
		if err == nil {
			err = in.runScript(ctx, st.Name, p)
		}
		p.stop()
		if err != nil {
			return fmt.Errorf("setup %s: %w", st.Name, err)
		}
		again := in.Checker.Status([]Stack{st.Stack})[0]
		if !again.Installed() {
			return fmt.Errorf("setup %s finished but is still missing %s: nothing was linked; look at the lines above", st.Name, again.Missing())
		}
		took := time.Since(start)
		if took <= 10*time.Second && st.Installed() {
			fmt.Fprintf(in.Out, "setup %s: linked\n", st.Name)
			continue
		}
		fmt.Fprintf(in.Out, "setup %s: done in %s\n", st.Name, took.Round(time.Second))
		if took > 10*time.Second { // it did work: the next estimate here is this one
			in.record(st.Name, history{Seconds: took.Seconds(), Packages: p.packages()})
		}
	}
	return nil
}

func (in *Installer) installApt(ctx context.Context, pkgs []string, updated *bool) error {
	if len(pkgs) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("Debian packages %s are missing and installing them needs root: run this as root, or apt-get install them", strings.Join(pkgs, " "))
	}
	apt := in.Apt
	if apt == nil {
		apt = func(ctx context.Context, args ...string) error {
			cmd := exec.CommandContext(ctx, "apt-get", args...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(string(out), 20))
			}
			return nil
		}
	}
	if !*updated {
		if err := apt(ctx, "update", "-qq"); err != nil {
			return err
		}
		*updated = true
	}
	fmt.Fprintf(in.Out, "setup: apt-get install %s\n", strings.Join(pkgs, " "))
	return apt(ctx, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, pkgs...)...)
}

// runScript runs scripts/setup.sh --stack name, printing its lines but the "progress: " ones,
// which it counts; on failure the error carries the last lines of everything it printed.
func (in *Installer) runScript(ctx context.Context, name string, p *progress) error {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(in.Root, Script), "--stack", name)
	cmd.Dir = in.Root
	// The script runs in the clone: a relative cache (CONTINUUM_CACHE=cache) is made absolute
	// here, where it means what this process's lookups mean by it.
	cache, err := filepath.Abs(in.Cache)
	if err != nil {
		return err
	}
	cmd.Env = append(os.Environ(), "CONTINUUM_CACHE="+cache)
	// Its own process group, killed whole on cancel (Ctrl-C, SIGTERM): go build, pip or mvn
	// would otherwise outlive bash, keep writing into the cache and hold its output open, and
	// Wait would wait for them. WaitDelay bounds the wait for that output all the same.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	var last []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(pr, 64<<10)
		for {
			// ReadLine, not a Scanner: a line longer than the buffer is cut (its rest dropped)
			// rather than ending the reading and hiding every line after it.
			b, more, err := r.ReadLine()
			if err != nil {
				break
			}
			// A tool's colours and cursor moves (Maven's "\x1b[0m" despite -Dstyle.color=never)
			// would garble the progress line and a log: dropped.
			line := ansi.ReplaceAllString(string(b), "")
			if more {
				line += " […]"
			}
			for more && err == nil {
				_, more, err = r.ReadLine()
			}
			if len(last) == 40 {
				last = last[1:]
			}
			last = append(last, line)
			if _, ok := strings.CutPrefix(line, "progress: pkg "); ok {
				p.addPackage()
				continue
			}
			p.println(line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err = cmd.Wait()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%s --stack %s: %w; its last lines:\n%s", Script, name, err, strings.Join(last, "\n"))
	}
	return nil
}

// ansi matches a terminal escape sequence (CSI ... final byte).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// estimate is what installing st is expected to take here.
type estimate struct {
	Time     time.Duration
	Packages int
	measured bool // from this machine's last install
}

func (in *Installer) estimate(st Stack) estimate { return estimateFor(in.Cache, st) }

// where says where an estimate comes from.
func (e estimate) where() string {
	if e.measured {
		return "as the last install here took"
	}
	return "on a 2-core machine"
}

func estimateFor(cache string, st Stack) estimate {
	// The history is a file anyone with the cache can edit: a time that is not one (negative,
	// beyond a day, or overflowing a Duration) or a negative count is no estimate.
	if h, ok := readHistory(cache)[st.Name]; ok && h.Seconds > 0 && h.Seconds <= 24*3600 && h.Packages >= 0 {
		return estimate{Time: time.Duration(h.Seconds * float64(time.Second)), Packages: h.Packages, measured: true}
	}
	return estimate{Time: st.Time}
}

// history is one stack's last install on this machine, kept in <cache>/setup-history.json.
type history struct {
	Seconds  float64 `json:"seconds"`
	Packages int     `json:"packages,omitempty"` // Go packages compiled
}

const historyFile = "setup-history.json"

func (in *Installer) history() map[string]history { return readHistory(in.Cache) }

func readHistory(cache string) map[string]history {
	m := map[string]history{}
	if b, err := os.ReadFile(filepath.Join(cache, historyFile)); err == nil {
		_ = json.Unmarshal(b, &m) // a damaged file only loses the estimates
	}
	return m
}

func (in *Installer) record(name string, h history) {
	m := in.history()
	m[name] = h
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil || os.MkdirAll(in.Cache, 0o755) != nil {
		return
	}
	// A temporary file of its own (O_EXCL, a fresh name): a fixed name could be a link planted
	// beside the history, and writing it would write through the link, as root.
	f, err := os.CreateTemp(in.Cache, historyFile+".tmp.*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(in.Cache, historyFile))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}

// progress prints a stack's progress line: elapsed against the estimate, bytes written into the
// cache since the start, Go packages compiled.
type progress struct {
	in    *Installer
	name  string
	start time.Time
	est   estimate
	mu    sync.Mutex
	pkgs  int
	shown bool // an interactive line is on screen
	quit  chan struct{}
	wg    sync.WaitGroup
	// written and writtenAt cache the bytes written: counting walks the cache (0.4 s for the
	// fl venv's 44k files), so an interactive line that is redrawn every second recounts them
	// only every bytesEvery.
	wmu       sync.Mutex
	before    map[string]bool // the cache's directories when the step started
	written   int64
	writtenAt time.Time
}

// bytesEvery bounds how often the progress line walks the cache to count bytes written.
const bytesEvery = 10 * time.Second

func (in *Installer) startProgress(name string, start time.Time, est estimate) *progress {
	p := &progress{in: in, name: name, start: start, est: est, quit: make(chan struct{}), before: cacheEntries(in.Cache)}
	every := in.ProgressEvery
	if every == 0 {
		every = 30 * time.Second
		if in.Interactive {
			every = time.Second
		}
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.show()
			}
		}
	}()
	return p
}

func (p *progress) addPackage() {
	p.mu.Lock()
	p.pkgs++
	p.mu.Unlock()
}

func (p *progress) packages() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pkgs
}

// line is the progress text: "setup fl: 1m20s of ~4 min, 1.2 GiB written, 412 of ~1650 Go packages compiled".
func (p *progress) line() string {
	s := fmt.Sprintf("setup %s: %s of ~%s", p.name, time.Since(p.start).Round(time.Second), humanDuration(p.est.Time))
	p.wmu.Lock()
	if time.Since(p.writtenAt) >= bytesEvery {
		p.written, p.writtenAt = writtenSince(p.in.Cache, p.before), time.Now()
	}
	written := p.written
	p.wmu.Unlock()
	if written > 0 {
		s += ", " + HumanBytes(written) + " written"
	}
	p.mu.Lock()
	n := p.pkgs
	p.mu.Unlock()
	if n > 0 {
		if p.est.Packages > 0 {
			s += fmt.Sprintf(", %d of ~%d Go packages compiled", n, p.est.Packages)
		} else {
			s += fmt.Sprintf(", %d Go packages compiled", n)
		}
	}
	return s
}

func (p *progress) show() {
	l := p.line()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.in.Interactive {
		fmt.Fprintf(p.in.Out, "\r\033[K%s", l)
		p.shown = true
		return
	}
	fmt.Fprintln(p.in.Out, l)
}

// println prints a line of the script's, above an interactive progress line.
func (p *progress) println(l string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.in.Out, "\r\033[K")
		p.shown = false
	}
	fmt.Fprintln(p.in.Out, l)
}

func (p *progress) stop() {
	close(p.quit)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.in.Out, "\r\033[K")
		p.shown = false
	}
}

// cacheEntries lists the setup cache's directories.
func cacheEntries(cache string) map[string]bool {
	m := map[string]bool{}
	ents, _ := os.ReadDir(cache)
	for _, e := range ents {
		if e.IsDir() {
			m[e.Name()] = true
		}
	}
	return m
}

// writtenSince is the size of the cache's directories that were not there before the step (a
// venv being filled, a build's <dir>.tmp.<pid>): what this step wrote, not what another clone's
// setup or an image build is writing into the cache at the same time.
func writtenSince(cache string, before map[string]bool) int64 {
	var n int64
	for name := range cacheEntries(cache) {
		if !before[name] {
			n += diskUsage(filepath.Join(cache, name))
		}
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ErrMissing is returned (wrapped) by Ensure when stacks are missing and not installed.
var ErrMissing = errors.New("stack not installed")
