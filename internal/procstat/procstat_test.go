package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	// The command name may contain spaces and parentheses; utime=250, stime=50 ticks,
	// cutime=7, cstime=3.
	stat := "1234 (odd (name) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 8 0 100 1000 200"
	for _, c := range []struct {
		name     string
		stat     string
		children bool
		want     float64
		err      bool
	}{
		{"own time", stat, false, 3, false},
		{"with children", stat, true, 3.1, false},
		{"short", "1234 (x) S 1", false, 0, true},
		{"no command name", "1234 x S 1", false, 0, true},
	} {
		got, err := Parse([]byte(c.stat), c.children)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: Parse = %v, %v; want %v (error %v)", c.name, got, err, c.want, c.err)
		}
	}
	if _, err := CPUSeconds(os.Getpid(), false); err != nil {
		t.Error(err)
	}
	if SelfCPU() <= 0 {
		t.Error("SelfCPU: this process used no CPU")
	}
}

func TestParseStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		status string
		want   Memory
		err    bool
	}{
		{"all three", "Name:\tcontinuum-proxy\nVmPeak:\t  1 kB\nVmRSS:\t   14704 kB\nRssAnon:\t    4288 kB\nRssFile:\t   10416 kB\nRssShmem:\t       0 kB\n",
			Memory{VmRSS: 14704 << 10, RssAnon: 4288 << 10, RssFile: 10416 << 10}, false},
		{"missing fields", "VmRSS:\t1 kB\n", Memory{VmRSS: 1 << 10}, true},
		{"not kB", "VmRSS:\t1 MB\nRssAnon:\t1 kB\nRssFile:\t1 kB\n", Memory{}, true},
	} {
		got, err := ParseStatus([]byte(c.status))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: ParseStatus = %+v, %v; want %+v (error %v)", c.name, got, err, c.want, c.err)
		}
	}
	self, err := ReadMemory(os.Getpid())
	if err != nil || self.VmRSS <= 0 || self.RssAnon <= 0 {
		t.Errorf("ReadMemory(self) = %+v, %v", self, err)
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("RSS(self) = %v, %v", rss, err)
	}
}

func TestParseHost(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"0.52 0.58 0.59 1/257 12345\n", 0.52, false},
		{"", 0, true},
		{"x 1 2", 0, true},
	} {
		if got, err := ParseLoadAvg([]byte(c.in)); (err != nil) != c.err || got != c.want {
			t.Errorf("ParseLoadAvg(%q) = %v, %v", c.in, got, err)
		}
	}
	if _, err := LoadAvg1(); err != nil {
		t.Error(err)
	}
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := ParseCPUModel([]byte(cpuinfo)); got != "Intel(R) Xeon(R) Processor" {
		t.Errorf("ParseCPUModel = %q", got)
	}
	if got := ParseCPUModel([]byte("processor\t: 0\n")); got != "" {
		t.Errorf("ParseCPUModel without a model = %q", got)
	}
	if Kernel() == "" {
		t.Error("Kernel: empty")
	}
}

// TestThreadCPUSeconds: a busy loop of ~50 ms shows as CPU time with better resolution than
// /proc/PID/stat's 10 ms ticks, and the figure only grows.
func TestThreadCPUSeconds(t *testing.T) {
	before, err := ThreadCPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	after, err := ThreadCPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d <= 0 || d > 10 {
		t.Errorf("CPU over a busy loop: %v s", d)
	}
	if _, err := ThreadCPUSeconds(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
