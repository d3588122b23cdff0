package testbed

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// NodeLoad is a node's resource use in the latest round of a running Sampler (the experiment
// runner runs one; a bare `testbed up` does not, and then Status has no load).
type NodeLoad struct {
	At       time.Time `json:"at"`        // when the sample was taken
	CPUCores float64   `json:"cpu_cores"` // cores used over the last sample interval
	// CPU is CPUCores over the cores the node may use: its quota, or the host's CPU count.
	CPU      float64 `json:"cpu"`
	RSSBytes int64   `json:"rss_bytes"`
	// Memory is RSSBytes over the node's memory limit, or over the host's memory when unlimited.
	Memory float64 `json:"memory"`
}

// publishLoad records the node rows of a sampler round for Status.
func (tb *Testbed) publishLoad(at time.Time, rows []Sample) {
	hostMem := hostMemory()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.load == nil {
		tb.load = map[string]NodeLoad{}
	}
	for _, r := range rows {
		n := tb.byName[r.Node]
		if r.Component != "" || n == nil {
			continue
		}
		cpus := n.cpus
		if cpus <= 0 {
			cpus = float64(runtime.NumCPU())
		}
		l := NodeLoad{At: at.UTC(), CPUCores: r.CPUUtil, CPU: r.CPUUtil / cpus, RSSBytes: r.RSS}
		if limit := n.memory; limit > 0 {
			l.Memory = float64(r.RSS) / float64(limit)
		} else if hostMem > 0 {
			l.Memory = float64(r.RSS) / float64(hostMem)
		}
		tb.load[r.Node] = l
	}
}

func hostMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// ParseService reads the CLI form NAME:PORT of a service declaration, with attributes as
// KEY=VALUE strings (`testbed start --service dps:8080 --attr tier=edge`).
func ParseService(nameport string, attrs []string) (*Service, error) {
	name, port, ok := strings.Cut(nameport, ":")
	p, err := strconv.Atoi(port)
	if !ok || err != nil {
		return nil, fmt.Errorf("service %q: want NAME:PORT, e.g. dps:8080", nameport)
	}
	s := &Service{Name: name, Port: p}
	for _, a := range attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("attribute %q: want KEY=VALUE, e.g. tier=edge", a)
		}
		if s.Attributes == nil {
			s.Attributes = map[string]string{}
		}
		s.Attributes[k] = v
	}
	return s, s.Validate()
}
