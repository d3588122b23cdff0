package proxybench

import (
	"os/exec"
	"strconv"
)

// pinning places the processes of a run on CPUs: the proxy under test (continuum-proxy or
// HAProxy) alone on one CPU, this process (load generator and upstream) on the others. On a
// 2-core machine this is what makes 10k req/s possible at all without the three competing
// for both cores, and it makes "one core" mean one core for the proxy.
type pinning struct {
	// proxyCPU is the CPU the proxy runs on (-1: not pinned).
	proxyCPU int
	// benchCPUs are the CPUs this process runs on.
	benchCPUs []int
	undo      func()
}

// command wraps a child's command line so that it runs on the proxy's CPU; threads the child
// starts inherit the affinity.
func (p *pinning) command(bin string, args ...string) *exec.Cmd {
	if p == nil || p.proxyCPU < 0 {
		return exec.Command(bin, args...)
	}
	return exec.Command("taskset", append([]string{"-c", strconv.Itoa(p.proxyCPU), bin}, args...)...)
}
