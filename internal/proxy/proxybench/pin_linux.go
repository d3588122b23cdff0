package proxybench

import (
	"errors"
	"fmt"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// pin pins this process's threads off the last CPU it may use and returns the pinning; with
// fewer than two CPUs, without taskset, or when off, it pins nothing.
func pin(on bool) (*pinning, error) {
	p := &pinning{proxyCPU: -1, undo: func() {}}
	if !on {
		return p, nil
	}
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, fmt.Errorf("read this process's CPU affinity: %w", err)
	}
	var cpus []int
	for c := range 1024 {
		if orig.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return p, nil
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return nil, errors.New("pinning needs taskset (util-linux) in $PATH; install it or pass --pin=false")
	}
	var mine unix.CPUSet
	for _, c := range cpus[:len(cpus)-1] {
		mine.Set(c)
	}
	if err := benchkit.SetProcessAffinity(&mine); err != nil {
		_ = benchkit.SetProcessAffinity(&orig)
		return nil, err
	}
	p.proxyCPU, p.benchCPUs = cpus[len(cpus)-1], cpus[:len(cpus)-1]
	p.undo = func() { _ = benchkit.SetProcessAffinity(&orig) }
	return p, nil
}
