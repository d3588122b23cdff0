package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// dataDirLockName is the file in the data directory that a running member holds locked and
// writes its process id into, so that a second member on the same directory is told which
// process holds it, not the storage engine's bare "resource temporarily unavailable".
const dataDirLockName = "kv.lock"

// dataDirLock is an exclusive advisory lock on a data directory, held for the server's life.
// The kernel drops it when the process exits, so a crashed member leaves no stale lock.
type dataDirLock struct{ f *os.File }

// lockDataDir takes the lock without waiting: a directory in use is an error at once.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, dataDirLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %q: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			// The holder writes its pid right after locking; a holder caught in between shows
			// as an empty file.
			b, _ := os.ReadFile(path)
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); perr == nil && pid > 0 {
				return nil, fmt.Errorf("data dir %q in use by process %d (another continuum kv?): stop it or give this member its own --data-dir", dir, pid)
			}
			return nil, fmt.Errorf("data dir %q in use by another process: stop it or give this member its own --data-dir", dir)
		}
		return nil, fmt.Errorf("data dir %q: lock %s: %w", dir, path, err)
	}
	// The pid serves the message above only: failing to write it costs nothing else.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &dataDirLock{f: f}, nil
}

// release unlocks the directory, once (Start's failure paths may reach it twice). The file
// stays: removing it would race with a member that opened it and is about to lock it.
func (l *dataDirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Close()
	l.f = nil
}
