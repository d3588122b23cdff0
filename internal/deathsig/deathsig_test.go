package deathsig

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/testenv"
)

// sleeper is a child that would run for a minute, with SIGKILL as its parent-death signal.
func sleeper(t *testing.T) *exec.Cmd {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// alive: not dead (a killed child not yet waited for is a zombie).
func alive(cmd *exec.Cmd) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	_, after, _ := strings.Cut(string(b), ") ")
	return err == nil && !strings.HasPrefix(after, "Z")
}

// endThread runs f on a thread of its own and ends that thread: its goroutine exits locked. Not
// on the main thread, which Go never ends: a goroutine that finds itself there holds it, so that
// the one it starts instead cannot run there.
func endThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if unix.Gettid() == os.Getpid() {
			defer runtime.UnlockOSThread()
			endThread(f)
			return
		}
		f()
	}()
	<-done
}

// TestStartOutlivesThreads: a child forked by a thread that then ends gets its parent-death
// signal (the hazard); one started by Start lives on while threads end around it.
func TestStartOutlivesThreads(t *testing.T) {
	kept := sleeper(t)
	if err := Start(kept); err != nil {
		t.Fatal(err)
	}
	lost := sleeper(t)
	endThread(func() {
		if err := lost.Start(); err != nil {
			t.Error(err)
		}
	})
	for range 8 { // ends threads the runtime may have run the starter's callers on
		endThread(func() {})
	}
	testenv.Eventually(t, 10*time.Second, "the child of a thread that ended killed", func() bool { return !alive(lost) })
	if !alive(kept) {
		t.Errorf("the child Start started was killed when other threads ended")
	}
}
