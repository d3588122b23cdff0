package experiment

import (
	"encoding/csv"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/version"
)

// environmentInfo is environment.json: what the numbers were measured on.
type environmentInfo struct {
	Continuum   string `json:"continuum"`
	Go          string `json:"go"`
	Kernel      string `json:"kernel"`
	CPUModel    string `json:"cpu_model"`
	CPUs        int    `json:"cpus"`
	MemoryBytes uint64 `json:"memory_bytes"`
	Hostname    string `json:"hostname"`
	Started     string `json:"started"`
}

func environment(started time.Time) environmentInfo {
	env := environmentInfo{Continuum: version.String(), Go: runtime.Version(), CPUs: runtime.NumCPU(),
		Started: started.UTC().Format(time.RFC3339)}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		env.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	env.Hostname, _ = os.Hostname()
	env.CPUModel = procstat.CPUModel()
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		env.MemoryBytes = uint64(si.Totalram) * uint64(si.Unit)
	}
	return env
}

// sampleWriter writes samples.csv (docs/results-format.md).
type sampleWriter struct {
	mu sync.Mutex
	f  *os.File
	w  *csv.Writer
}

func newSampleWriter(path string) (*sampleWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	_ = w.Write(results.SamplesHeader)
	return &sampleWriter{f: f, w: w}, nil
}

func (s *sampleWriter) write(rows []platform.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		_ = s.w.Write([]string{fmt.Sprintf("%.3f", r.T.Seconds()), r.Node, r.Component,
			fmt.Sprintf("%.4f", r.CPUSeconds), fmt.Sprintf("%.4f", r.CPUUtil), fmt.Sprint(r.RSS), fmt.Sprint(r.Disk),
			fmt.Sprint(r.RxBytes), fmt.Sprint(r.TxBytes), fmt.Sprintf("%.3f", r.PowerW), fmt.Sprintf("%.3f", r.EnergyJ),
			fmt.Sprintf("%.3f", r.IdleJ), fmt.Sprint(r.RxPackets), fmt.Sprint(r.TxPackets)})
	}
	s.w.Flush()
}

func (s *sampleWriter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Flush()
	s.f.Close()
}
