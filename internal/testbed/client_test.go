package testbed

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client of a testbed that is not running says so, whether its socket is gone (after down)
// or left by a daemon that died, instead of the dial error.
func TestClientTestbedNotRunning(t *testing.T) {
	dir := t.TempDir()
	_, err := NewClient(dir, "gone").Status()
	if err == nil || !strings.Contains(err.Error(), `testbed "gone" is not running`) {
		t.Errorf("no socket: %v", err)
	}
	// A socket file nobody listens on: bound, then the listener closed without unlinking.
	if err := os.MkdirAll(filepath.Join(dir, "dead"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "dead", controlSocket), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	_, err = NewClient(dir, "dead").Status()
	if err == nil || !strings.Contains(err.Error(), `testbed "dead" is not running`) {
		t.Errorf("stale socket: %v", err)
	}
}
