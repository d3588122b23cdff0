package baselines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/deathsig"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/promtext"
	"github.com/continuum-project/continuum/internal/tools"
)

// Server is a started key-value server.
type Server struct {
	// Kind is etcd, redis or kv.
	Kind string
	// Target is how clients reach it (kvtarget.Open).
	Target kvtarget.Target
	// DataDir holds everything the server persists; LogFile its stdout and stderr.
	DataDir string
	LogFile string
	// Args is the command line it was started with.
	Args []string
	// MetricsURL is where the server serves Prometheus metrics (empty: it does not; Redis).
	MetricsURL string

	cmd          *exec.Cmd
	log          *os.File
	done         chan struct{}
	waitErr      error
	ready        func(context.Context) error
	readyTimeout time.Duration
}

// DefaultReadyTimeout bounds how long a start function waits for the server to answer.
const DefaultReadyTimeout = 60 * time.Second

// start runs args with dir/data as data directory and dir/server.log as log, then polls ready
// until it succeeds, the process exits or timeout passes.
func start(ctx context.Context, kind string, target kvtarget.Target, dataDir, logFile string, args []string,
	timeout time.Duration, ready func(context.Context) error) (*Server, error) {
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	s := &Server{Kind: kind, Target: target, DataDir: dataDir, LogFile: logFile, Args: args, ready: ready, readyTimeout: timeout}
	if err := s.launch(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// launch starts the process and waits until it is ready.
func (s *Server) launch(ctx context.Context) error {
	if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
		return fmt.Errorf("%s data dir: %w", s.Kind, err)
	}
	lf, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", s.Kind, err)
	}
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Own process group (a terminal's Ctrl-C reaches us, and we stop it in order), and
	// killed if the starting process dies, so no server outlives a crashed benchmark.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := deathsig.Start(cmd); err != nil {
		lf.Close()
		return fmt.Errorf("start %s (%s): %w", s.Kind, s.Args[0], err)
	}
	s.cmd, s.log, s.done, s.waitErr = cmd, lf, make(chan struct{}), nil
	done := s.done
	go func() {
		s.waitErr = cmd.Wait()
		close(done)
	}()

	deadline := time.Now().Add(s.readyTimeout)
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		last = s.ready(rctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-done:
			s.log.Close()
			return fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", s.Kind, s.waitErr, s.LogFile, tail(s.LogFile))
		case <-ctx.Done():
			_ = s.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.Stop()
			return fmt.Errorf("%s not ready after %v: %v; log %s:\n%s", s.Kind, s.readyTimeout, last, s.LogFile, tail(s.LogFile))
		}
	}
}

// Restart stops the server (if it runs) and starts it again with the same command line, so
// on the same ports and data: what a client sees when a server restarts. Not safe to call
// concurrently with the Server's other methods.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.launch(ctx)
}

// Crash kills the server's process group with SIGKILL, with no chance to shut down (what an
// OOM kill or a crash leaves; the page cache survives, unlike at a power cut), then starts it
// again with the same command line, on the same ports and data. Not safe to call concurrently
// with the Server's other methods.
func (s *Server) Crash(ctx context.Context) error {
	select {
	case <-s.done:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		s.log.Close()
	}
	return s.launch(ctx)
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Done is closed when the process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
const StopGrace = 10 * time.Second

// Stop sends SIGTERM, waits up to StopGrace, then kills the process group. It is safe to call
// more than once.
func (s *Server) Stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.log.Close()
	return nil
}

// RSS is the server's resident set size in bytes (VmRSS).
func (s *Server) RSS() (int64, error) { return procstat.RSS(s.PID()) }

// DiskBytes is the space the data directory occupies (allocated blocks, as du counts them:
// preallocated WAL segments count in full).
func (s *Server) DiskBytes() (int64, error) { return DirBytes(s.DataDir) }

// DirBytes sums the allocated blocks of the files under dir.
func DirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // files come and go while a server runs
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// tail returns the last lines of a log file for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// lookBinary resolves name: an explicit path wins, then $env, then what `make setup` installed
// (.tools/bin/name of the clone above the working directory or the executable, or the setup
// cache: internal/tools), then next to the running executable, then PATH.
func lookBinary(explicit, env, name string) (string, error) {
	if explicit != "" {
		return exec.LookPath(explicit)
	}
	if v := os.Getenv(env); v != "" {
		return exec.LookPath(v)
	}
	if p, ok := tools.Find(tools.Bin(name)); ok {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found in %s, nor in PATH: set $%s or run `continuum setup baselines` in the clone (builds .tools/bin/%s)", name, tools.Searched(), env, name)
	}
	return p, nil
}

// CPUSeconds is the CPU time (user + system) the server process has used so far.
func (s *Server) CPUSeconds() (float64, error) { return procstat.CPUSeconds(s.PID(), false) }

// Metrics scrapes the server's Prometheus metrics: the value of every sample by metric name,
// summed over label sets (counters and gauges; histograms and summaries are skipped).
func (s *Server) Metrics(ctx context.Context) (map[string]float64, error) {
	if s.MetricsURL == "" {
		return nil, fmt.Errorf("%s serves no metrics", s.Kind)
	}
	return promtext.Scrape(ctx, s.MetricsURL)
}
