package faasbench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/procstat"
)

// gatewayCore runs `continuum faas gateway` as its own process limited to one core of Go
// execution (GOMAXPROCS=1), routing to a trivial Go upstream in this process, and measures its
// closed-loop throughput and its CPU, cfg.Repeats times.
//
// With two CPUs or more, the gateway is pinned to one CPU and this process (load and upstream)
// to another, for the measurement: otherwise the two share both CPUs, the scheduler moves them
// about, and the gateway gets at most what the load generator leaves it (on a 2-CPU machine
// ~0.82 of a core: a figure of the machine, not of the gateway).
func gatewayCore(ctx context.Context, cfg Config) (*GatewayCore, error) {
	gwCPU, unpin, err := pinSelf()
	if err != nil {
		return nil, err
	}
	defer unpin()
	upURL, stopUp, err := serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	if err != nil {
		return nil, err
	}
	defer stopUp()
	addr, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	// Its credentials (unused: the bench calls /function/ only) go in a directory of its own.
	dataDir, err := os.MkdirTemp("", "continuum-bench-gateway-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	args := []string{cfg.Binary, "faas", "gateway", "--listen", addr, "--data-dir", dataDir, "--function", "name=echo,url=" + upURL}
	if gwCPU >= 0 {
		// taskset sets the affinity before exec, so every thread of the gateway inherits it.
		args = append([]string{"taskset", "-c", strconv.Itoa(gwCPU)}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the gateway: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// It prints its address once it listens.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "gateway listening") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			return nil, fmt.Errorf("the gateway exited before listening")
		}
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("the gateway did not listen within 30 s")
	}
	url := "http://" + addr + "/function/echo"
	gc := &GatewayCore{PinnedCPU: gwCPU}
	c := cfg
	c.Clients = cfg.GatewayClients
	for rep := 0; rep < cfg.Repeats; rep++ {
		cpu0, t0 := cpuOf(cmd.Process.Pid), time.Now()
		l, err := closedLoop(ctx, url, c)
		if err != nil {
			return nil, err
		}
		gc.RPS = append(gc.RPS, l.RPS)
		gc.Cores = append(gc.Cores, (cpuOf(cmd.Process.Pid)-cpu0)/time.Since(t0).Seconds())
		gc.P50, gc.P99 = append(gc.P50, l.P50), append(gc.P99, l.P99)
		gc.Errors += l.Errors
	}
	return gc, nil
}

func cpuOf(pid int) float64 {
	cpu, _ := procstat.CPUSeconds(pid, false) // 0 when it cannot be read
	return cpu
}

// pinSelf pins every thread of this process to the first CPU it may use and returns the second
// one for the gateway, and how to undo it; with fewer than two CPUs it pins nothing and
// returns -1. Threads started later inherit their creator's affinity, so they stay pinned.
func pinSelf() (other int, unpin func(), err error) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return -1, func() {}, fmt.Errorf("read this process's CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < 1024 && len(cpus) < 2; c++ {
		if orig.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return -1, func() {}, nil
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return -1, func() {}, nil
	}
	var mine unix.CPUSet
	mine.Set(cpus[0])
	if err := benchkit.SetProcessAffinity(&mine); err != nil {
		_ = benchkit.SetProcessAffinity(&orig)
		return -1, func() {}, err
	}
	return cpus[1], func() { _ = benchkit.SetProcessAffinity(&orig) }, nil
}
