package agent

import (
	"fmt"
	"regexp"
	"syscall"
)

// StartRequest asks the agent to start a run of an instance.
type StartRequest struct {
	Name     string   `json:"name"`
	Args     []string `json:"args"`
	Env      []string `json:"env,omitempty"`       // KEY=VALUE added to the agent's environment
	Dir      string   `json:"dir,omitempty"`       // working directory, created if missing
	DataDirs []string `json:"data_dirs,omitempty"` // Sample reports their disk use
	// Binary: when Args[0] equals it, the agent runs its own executable instead, because the
	// runner's continuum binary path is not a path in the pod.
	Binary string `json:"binary,omitempty"`
}

// Exit is how a run exited: Code -1 and the signal's name when a signal killed it.
type Exit struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
}

// Sample is the node pod's figures now.
type Sample struct {
	Instances []InstanceSample `json:"instances"`
	// The pod's totals: CPU seconds and memory from its cgroup when readable, else the sum
	// over its processes.
	CPUSeconds float64 `json:"cpu_seconds"`
	RSS        int64   `json:"rss"`
	// Its interfaces' counters, loopback excluded.
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
}

// InstanceSample is one instance's figures.
type InstanceSample struct {
	Name    string `json:"name"`
	Run     int    `json:"run"`
	Running bool   `json:"running"`
	// CPUSeconds is cumulative over every run's process group, exited children included.
	CPUSeconds float64 `json:"cpu_seconds"`
	RSS        int64   `json:"rss"`  // the current run's process group
	Disk       int64   `json:"disk"` // bytes allocated under DataDirs
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("instance name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", name)
	}
	return nil
}

// signals are the signals the API takes, by their names without "SIG".
var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
	"INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

func signalName(sig syscall.Signal) (string, error) {
	for n, s := range signals {
		if s == sig {
			return n, nil
		}
	}
	return "", fmt.Errorf("signal %v: the agent sends TERM, KILL, STOP, CONT, INT, HUP, USR1 or USR2", sig)
}
