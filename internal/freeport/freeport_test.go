package freeport

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestHelperProcess is the other process of TestTwoProcessesNeverShare: it prints the ports it
// was given and waits for its stdin to close (holding its block as a live process does).
func TestHelperProcess(t *testing.T) {
	if os.Getenv("FREEPORT_HELPER") != "1" {
		t.Skip("run by TestTwoProcessesNeverShare")
	}
	firstBlock = func(int) int { return 0 }
	ps, err := Ports(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		os.Stdout.WriteString(strconv.Itoa(p) + "\n")
	}
	os.Stdout.WriteString("done\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

// TestTwoProcessesNeverShare: two processes that start their search at the same block (as the
// random start may give them) still get disjoint ports.
func TestTwoProcessesNeverShare(t *testing.T) {
	firstBlock = func(int) int { return 0 }
	defer func() { firstBlock = rand.IntN }()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "FREEPORT_HELPER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	theirs := map[int]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "done" {
		if p, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			theirs[p] = true
		}
	}
	if len(theirs) != 100 {
		t.Fatalf("the other process printed %d ports, want 100", len(theirs))
	}
	mine, err := Ports(100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	lo, hi := lowest, min(highest, ephemeralStart())
	for _, p := range mine {
		if theirs[p] {
			t.Errorf("port %d was given to both processes", p)
		}
		if seen[p] {
			t.Errorf("port %d was given twice in one process", p)
		}
		seen[p] = true
		if (hi-lo)/blockSize >= minBlocks && (p < lo || p >= hi) {
			t.Errorf("port %d is outside %d-%d, where the kernel may give it to anyone", p, lo, hi-1)
		}
	}
}

func TestPortIsBindable(t *testing.T) {
	addr, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the address Addr gave: %v", err)
	}
	defer l.Close()
	p := l.Addr().(*net.TCPAddr).Port
	if bindable(p) {
		t.Errorf("bindable(%d) while a listener holds it", p)
	}
}

// TestAllBlocksTaken: when no block is free, ports still come, from this process's own blocks
// again, and are bindable (every block is made to look taken: really taking them all would
// starve the other test processes).
func TestAllBlocksTaken(t *testing.T) {
	if (min(highest, ephemeralStart())-lowest)/blockSize < minBlocks {
		t.Skip("the ephemeral range leaves no blocks here: ports come from the kernel")
	}
	if _, err := Port(); err != nil { // this process owns a block
		t.Fatal(err)
	}
	claimBlock = func(int, int) (*block, error) { return nil, errors.New("every block is taken") }
	defer func() { claimBlock = claim }()
	ps, err := Ports(3 * blockSize)
	if err != nil {
		t.Fatalf("with no block free: %v", err)
	}
	for _, p := range ps {
		if !bindable(p) {
			t.Errorf("port %d is not free", p)
		}
	}
}
