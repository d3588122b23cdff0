// Package deathsig starts child processes that must end with this one (exec.Cmd's Pdeathsig)
// so that they do, and only then.
//
// Linux sends a child its parent-death signal when the thread that forked it exits, not the
// process: a Go program forks from whichever thread runs the goroutine at the time, and a
// thread exits whenever a goroutine locked to it (runtime.LockOSThread) ends without unlocking:
// the testbed fabric's real-time threads when a fabric closes, a failed network-namespace
// switch. A cluster's containerd forked from such a thread was killed, long before its
// supervisor ended, when a testbed in the same process went down (make test, issue 44: a
// one-node cluster beside a multi-node one). Start forks every such child from one thread
// that lives as long as the process.
package deathsig

import (
	"os/exec"
	"runtime"
	"sync"
)

var (
	startOnce sync.Once
	starts    chan func()
)

// Start starts cmd (whose SysProcAttr sets Pdeathsig) from the package's own thread, which no
// goroutine ever leaves: the child gets its signal when this process ends.
func Start(cmd *exec.Cmd) error {
	startOnce.Do(func() {
		starts = make(chan func())
		go func() {
			runtime.LockOSThread() // for good: the thread ends with the process
			for f := range starts {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	starts <- func() { errc <- cmd.Start() }
	return <-errc
}
