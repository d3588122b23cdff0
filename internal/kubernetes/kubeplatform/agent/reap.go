package agent

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// reapLoop reaps orphans on every SIGCHLD until stop is closed.
func (s *server) reapLoop(stop <-chan struct{}) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		s.reapOrphans()
		select {
		case <-sigs:
		case <-stop:
			return
		}
	}
}

// reapOrphans waits for every zombie child of the agent that is not a run's leader. A run's
// leader is reaped by its own cmd.Wait only: reaping it here would lose its exit status.
func (s *server) reapOrphans() {
	s.forkMu.Lock()
	defer s.forkMu.Unlock()
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		state, ppid, ok := parseStatePpid(b)
		if !ok || state != "Z" || ppid != self {
			continue
		}
		s.mu.Lock()
		ours := s.children[pid]
		s.mu.Unlock()
		if !ours {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// parseStatePpid reads the state (field 3) and parent pid (field 4) of /proc/PID/stat.
func parseStatePpid(b []byte) (string, int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return f[0], ppid, err == nil
}
