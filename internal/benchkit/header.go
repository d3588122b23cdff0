package benchkit

import (
	"runtime"
	"time"

	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/version"
)

// Header says what produced a result: the command that regenerates it, the commit, the machine,
// when it ran and how busy the host was. Results embed it, so its fields sit at the top of
// their JSON.
type Header struct {
	Command string `json:"command,omitempty"`
	Commit  string `json:"commit,omitempty"`
	// Machine is Host in one line. Results written before Host existed have only this, and a
	// report rendered again from them states it.
	Machine string   `json:"machine,omitempty"`
	Host    *Machine `json:"host,omitempty"`
	// Started and Finished bound the measurement.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// LoadAvg is the host's 1-minute load average at the start and at the end; LoadPeak the
	// highest of every sample taken (those two and any Observe'd in between). Other work on
	// the machine competes with what is measured and with the load generator.
	LoadAvg  [2]float64 `json:"loadavg_1m"`
	LoadPeak float64    `json:"loadavg_1m_peak,omitempty"`
}

// Start begins a header for command: this machine, this binary's commit, now, the load average.
func Start(command string) Header {
	m := ReadMachine()
	h := Header{Command: command, Commit: version.Revision(), Machine: m.String(), Host: &m, Started: time.Now().UTC()}
	h.LoadAvg[0] = h.SampleLoad()
	return h
}

// Finish records the end of the measurement and the load average then.
func (h *Header) Finish() {
	h.Finished = time.Now().UTC()
	h.LoadAvg[1] = h.SampleLoad()
}

// SampleLoad reads the 1-minute load average now, keeps it in LoadPeak if higher, and returns
// it (0 when it cannot be read).
func (h *Header) SampleLoad() float64 {
	v, _ := procstat.LoadAvg1()
	h.Observe(v)
	return v
}

// Observe raises LoadPeak to a load average sampled elsewhere.
func (h *Header) Observe(load float64) { h.LoadPeak = max(h.LoadPeak, load) }

// Peak is the highest load average the header knows of.
func (h Header) Peak() float64 { return max(h.LoadPeak, h.LoadAvg[0], h.LoadAvg[1]) }

// Cores is the machine's CPU count (this machine's when the header does not say).
func (h Header) Cores() int {
	if h.Host != nil && h.Host.Cores > 0 {
		return h.Host.Cores
	}
	return runtime.NumCPU()
}

// BusyLoad is the 1-minute load average above which a run on a machine with cores CPUs is
// flagged: a benchmark keeps about one runnable thread per CPU busy itself (a server and the
// load generator near their limit), so half a thread more than the CPUs means something was
// waiting for one.
func BusyLoad(cores int) float64 { return float64(cores) + 0.5 }

// Busy says whether the machine was busy during the run, by the header's own samples and any
// the benchmark took besides.
func (h Header) Busy(samples ...float64) (peak float64, busy bool) {
	peak = h.Peak()
	for _, s := range samples {
		peak = max(peak, s)
	}
	return peak, peak > BusyLoad(h.Cores())
}
