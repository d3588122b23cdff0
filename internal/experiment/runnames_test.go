package experiment

import (
	"fmt"
	"os"
	"testing"
)

// Runs of this process at once get distinct names (two Executes side by side: tests sharing a
// cluster); one after the other, a run gets run<pid>-<id> as before.
func TestRunNamesDistinctWhileHeld(t *testing.T) {
	s := &nameSet{held: map[string]bool{}}
	base := fmt.Sprintf("run%d-001", os.Getpid()%100000)
	a, b, c := s.take("001"), s.take("001"), s.take("001")
	if a != base || b != fmt.Sprintf("run%d-2-001", os.Getpid()%100000) || c != fmt.Sprintf("run%d-3-001", os.Getpid()%100000) {
		t.Errorf("names while held: %s %s %s", a, b, c)
	}
	s.release(b)
	if d := s.take("001"); d != b {
		t.Errorf("a released name: %s, want %s again", d, b)
	}
	s.release(a)
	if e := s.take("001"); e != base {
		t.Errorf("after the first run: %s, want %s", e, base)
	}
	if f := s.take("002"); f != fmt.Sprintf("run%d-002", os.Getpid()%100000) {
		t.Errorf("another run id: %s", f)
	}
}
