package procstat

import (
	"os"
	"testing"
)

func TestParse(t *testing.T) {
	// The command name may contain spaces and parentheses; utime=250, stime=50 ticks,
	// cutime=7, cstime=3.
	stat := "1234 (odd (name) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 8 0 100 1000 200"
	cpu, err := Parse([]byte(stat), false)
	if err != nil || cpu != 3 {
		t.Fatalf("Parse: %v, %v (want 3 s)", cpu, err)
	}
	if cpu, err := Parse([]byte(stat), true); err != nil || cpu != 3.1 {
		t.Fatalf("Parse with children: %v, %v (want 3.1 s)", cpu, err)
	}
	if _, err := Parse([]byte("1234 (x) S 1"), false); err == nil {
		t.Error("short stat accepted")
	}
	if _, err := CPUSeconds(os.Getpid(), false); err != nil {
		t.Error(err)
	}
}
