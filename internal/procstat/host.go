package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LoadAvg1 is the host's 1-minute load average (/proc/loadavg's first field).
func LoadAvg1() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	return ParseLoadAvg(b)
}

// ParseLoadAvg reads the 1-minute load average from the text of /proc/loadavg.
func ParseLoadAvg(b []byte) (float64, error) {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("loadavg: empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("loadavg: %w", err)
	}
	return v, nil
}

// CPUModel is the first "model name" of /proc/cpuinfo ("" when there is none: some
// architectures do not name it).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return ParseCPUModel(b)
}

// ParseCPUModel reads the first "model name" from the text of /proc/cpuinfo.
func ParseCPUModel(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Kernel is the running kernel's release (/proc/sys/kernel/osrelease).
func Kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}
