package agent

import (
	"fmt"
	"regexp"
)

// StartRequest asks the agent to start a new run of an instance.
type StartRequest struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"` // KEY=VALUE added to the agent's environment
	Dir  string   `json:"dir,omitempty"` // created if missing
	// DataDirs are the directories whose disk use Sample reports for the instance.
	DataDirs []string `json:"data_dirs,omitempty"`
	// Binary: when Args[0] equals it, the agent runs its own executable (Options.Self) instead:
	// the runner's continuum binary path is not a path in the pod.
	Binary string `json:"binary,omitempty"`
}

// Exit is how a run exited: its exit code, or -1 and the signal's name when a signal killed it.
type Exit struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
}

// Sample is a measurement of the node pod.
type Sample struct {
	Instances []InstanceSample `json:"instances"`
	// The pod's totals: CPU seconds and memory from its cgroup when readable (cgroup v2
	// cpu.stat / memory.current, or v1 cpuacct.usage / memory.usage_in_bytes minus cache), else
	// the sum over the agent and its instances; network counters of every interface except lo
	// (/proc/net/dev).
	CPUSeconds float64 `json:"cpu_seconds"`
	RSS        int64   `json:"rss"`
	RxBytes    uint64  `json:"rx_bytes"`
	TxBytes    uint64  `json:"tx_bytes"`
	RxPackets  uint64  `json:"rx_packets"`
	TxPackets  uint64  `json:"tx_packets"`
}

// InstanceSample is a measurement of one instance.
type InstanceSample struct {
	Name    string `json:"name"`
	Run     int    `json:"run"` // the latest run
	Running bool   `json:"running"`
	// CPUSeconds is cumulative over the instance's process group (all its runs), including
	// children its processes have waited for.
	CPUSeconds float64 `json:"cpu_seconds"`
	RSS        int64   `json:"rss"`  // anonymous resident memory, summed over its process group
	Disk       int64   `json:"disk"` // bytes allocated under DataDirs (st_blocks*512)
}

// Wire bodies that are not part of the API above.
type (
	startResponse struct {
		Run int `json:"run"`
	}
	signalRequest struct {
		Name   string `json:"name,omitempty"` // "" = every running instance
		Signal int    `json:"signal"`
	}
	stopRequest struct {
		GraceMillis int64 `json:"grace_ms"`
	}
)

// dialUpgrade is the Upgrade token of the dial endpoint.
const dialUpgrade = "continuum-dial"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// validName keeps instance names usable as file names in StateDir.
func validName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("invalid instance name %q: use 1-63 letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	return nil
}

func validStream(s string) error {
	if s != "stdout" && s != "stderr" {
		return fmt.Errorf("invalid stream %q: use \"stdout\" or \"stderr\"", s)
	}
	return nil
}
