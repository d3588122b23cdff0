package faasbench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/procstat"
)

// gatewayCore runs `continuum faas gateway` as its own process limited to one core of Go
// execution (GOMAXPROCS=1), routing to a trivial Go upstream in this process, and measures its
// closed-loop throughput and its CPU, cfg.Repeats times.
func gatewayCore(ctx context.Context, cfg Config) (*GatewayCore, error) {
	upURL, stopUp, err := serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	if err != nil {
		return nil, err
	}
	defer stopUp()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, cfg.Binary, "faas", "gateway", "--listen", addr, "--function", "name=echo,url="+upURL)
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
	gc := &GatewayCore{}
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
