package benchkit

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// SetProcessAffinity sets the CPU affinity of every thread of this process (a bench that pins
// itself away from the server it measures); threads started later inherit their creator's.
func SetProcessAffinity(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("set the CPU affinity of thread %d: %w", tid, err)
		}
	}
	return nil
}
