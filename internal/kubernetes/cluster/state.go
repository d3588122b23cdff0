package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"time"
)

// state is state.json in the state directory: what Down needs to undo Up when the supervisor
// that wrote it is gone.
type state struct {
	// PID is the supervisor's process (`continuum cluster up --foreground`).
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Config  Config    `json:"config"`
	// Sysctls are the values found before Up, put back by Down.
	Sysctls map[string]string `json:"sysctls"`
	// Chains are the iptables chains found before Up: Down deletes the ones that appeared since.
	Chains []string `json:"chains"`
	// Tables are the nftables tables found before Up: Down deletes the empty ones that appeared.
	Tables []string `json:"tables"`
	// Kubeconfig is the administrator's kubeconfig, once the control plane is up.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Ready is set once the Node is Ready and kube-proxy and DNS answer.
	Ready bool `json:"ready"`
}

func writeState(p paths, st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := p.state() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p.state())
}

func readState(dir string) (*state, error) {
	b, err := os.ReadFile(paths{dir}.state())
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%w in %s", errNotRunning, dir)
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", paths{dir}.state(), err)
	}
	return &st, nil
}

// alive reports whether the supervisor that wrote st still runs.
func (st *state) alive() bool {
	return st.PID > 0 && syscall.Kill(st.PID, 0) == nil && !isZombie(st.PID)
}
