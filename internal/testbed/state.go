package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vishvananda/netlink"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// cgroupRoot is the cgroup directory (in every hierarchy) under which testbeds live.
const cgroupRoot = "continuum"

// State is what a testbed records about itself before creating anything, so that
// `continuum testbed down --all` can remove it even after the process that made it was killed.
type State struct {
	Name    string    `json:"name"`
	PID     int       `json:"pid"` // process hosting the fabric and supervisor
	Created time.Time `json:"created"`
	// Netns are the namespace names (/run/netns/NAME and /etc/netns/NAME).
	Netns []string `json:"netns"`
	// Links are the host ends of the nodes' veth pairs (deleting one deletes its pair).
	Links []string `json:"links,omitempty"`
	// CgroupPath is the testbed's cgroup (relative to each hierarchy's root).
	CgroupPath string `json:"cgroup_path"`
}

const stateFile = "state.json"

// createState claims dir for a new testbed and writes its state file.
func createState(dir string, st *State) error {
	if prev, err := readState(dir); err == nil {
		alive := processAlive(prev.PID)
		how := "stale: its process is gone"
		if alive {
			how = fmt.Sprintf("running, pid %d", prev.PID)
		}
		return fmt.Errorf("testbed %q already exists (%s, created %s); run `continuum testbed down --name %s` first",
			st.Name, how, prev.Created.Format(time.RFC3339), st.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testbed state dir: %w", err)
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("testbed state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

func readState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &st, nil
}

func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// cleanupState removes everything st names: processes (via the cgroup tree), namespaces,
// /etc/netns entries, cgroups, and finally the state directory. Missing pieces are fine.
func cleanupState(cg *cgroups, dir string, st *State) error {
	var errs []error
	if st.CgroupPath != "" {
		if err := cg.remove(st.CgroupPath); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range st.Links {
		// Deleting the namespace would take the pair with it too, but asynchronously (when the
		// kernel destroys the namespace); deleting the link is done when this returns.
		if link, err := netlink.LinkByName(l); err == nil {
			if err := netlink.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("delete interface %s: %w", l, err))
			}
		}
	}
	for _, ns := range st.Netns {
		if err := deleteNetns(ns); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// List returns the testbeds recorded in stateDir, by name.
func List(stateDir string) ([]State, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []State
	for _, e := range entries {
		if st, err := readState(filepath.Join(stateDir, e.Name())); err == nil {
			out = append(out, *st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Destroy removes testbed name recorded in stateDir: it asks the hosting process to shut down
// (so it can stop its components gracefully) and then removes whatever is left from the state
// file, which also covers a host process that was killed with SIGKILL.
func Destroy(stateDir, name string) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	dir := filepath.Join(stateDir, name)
	st, err := readState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no testbed %q (state dir %s)", name, stateDir)
	}
	if err != nil {
		return err
	}
	if processAlive(st.PID) && st.PID != os.Getpid() {
		if err := NewClient(stateDir, name).Shutdown(); err == nil {
			waitGone(st.PID, 15*time.Second)
		}
		if processAlive(st.PID) {
			// The host does not answer or hangs: it owns the TUN fds, so it has to go.
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
			waitGone(st.PID, 5*time.Second)
		}
	}
	cg, err := detectCgroups()
	if err != nil {
		return err
	}
	return cleanupState(cg, dir, st)
}

// DestroyAll removes every testbed recorded in stateDir.
func DestroyAll(stateDir string) ([]string, error) {
	states, err := List(stateDir)
	if err != nil {
		return nil, err
	}
	var names []string
	var errs []error
	for _, st := range states {
		if err := Destroy(stateDir, st.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
			continue
		}
		names = append(names, st.Name)
	}
	return names, errors.Join(errs...)
}

// waitGone polls until pid exits (it is not our child, so it cannot be waited for).
func waitGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for processAlive(pid) && time.Now().Before(deadline) {
		if isZombie(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// Field 3 (after the parenthesised command) is the state.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] == 'Z'
		}
	}
	return false
}
