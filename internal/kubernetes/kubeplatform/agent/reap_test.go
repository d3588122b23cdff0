package agent

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// zombieChildren lists this process's zombie children.
func zombieChildren() []int {
	var out []int
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, ppid, ok := parseStatePpid(b); ok && st == "Z" && ppid == self {
			out = append(out, pid)
		}
	}
	return out
}

// TestReapOrphans: with Reap, an orphan an instance left behind is reaped when it exits, and
// the runs' own exits are still reported.
func TestReapOrphans(t *testing.T) {
	// As the pod's PID 1 would, this test process receives the orphans of its descendants.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	s, c := startAgentWith(t, Options{StateDir: t.TempDir(), Reap: true})
	tctx := testCtx(t)
	gate := t.TempDir() + "/go"
	// The subshell exits at once, orphaning its background child, which exits once the gate
	// exists; the instance itself lives until then too, then exits 4.
	script := `(while [ ! -f ` + gate + ` ]; do sleep 0.01; done &) ; echo orphaned; while [ ! -f ` + gate + ` ]; do sleep 0.01; done; exit 4`
	for i := 1; i <= 3; i++ {
		os.Remove(gate)
		run, err := c.Start(tctx, sh("parent", script))
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "orphan made", fileHas(s, "parent", "stdout", "orphaned"))
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		ex, err := c.Wait(tctx, "parent", run)
		if err != nil || ex != (Exit{Code: 4}) {
			t.Fatalf("run %d: Wait = %+v, %v; want exit 4", run, ex, err)
		}
		eventually(t, "no zombie children", func() bool { return len(zombieChildren()) == 0 })
	}
	var out bytes.Buffer
	if err := c.Output(tctx, "parent", 3, "stdout", &out); err != nil || out.String() != "orphaned\n" {
		t.Fatalf("Output = %q, %v", out.String(), err)
	}
}
