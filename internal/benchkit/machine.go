package benchkit

import (
	"fmt"
	"runtime"

	"github.com/continuum-project/continuum/internal/procstat"
)

// Machine is the host a benchmark ran on.
type Machine struct {
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
}

// ReadMachine describes this host.
func ReadMachine() Machine {
	return Machine{CPUModel: procstat.CPUModel(), Cores: runtime.NumCPU(), Kernel: procstat.Kernel(), Go: runtime.Version()}
}

// String is the machine in one line, as benchmark records state it.
func (m Machine) String() string {
	model := m.CPUModel
	if model == "" {
		model = "unknown CPU"
	}
	return fmt.Sprintf("%s, %d CPUs, kernel %s, %s", model, m.Cores, m.Kernel, m.Go)
}
