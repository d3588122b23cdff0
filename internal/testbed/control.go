package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/continuum-project/continuum/internal/httpjson"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The control socket lets other processes (the CLI's `testbed fault`, `status`, `down`) act on a
// testbed hosted by a daemon or by `continuum run`. It is plain HTTP+JSON on a unix socket in the
// testbed's state directory, so `curl --unix-socket` works too.
const controlSocket = "control.sock"

// Status is the testbed's state as reported by `continuum testbed status`.
type Status struct {
	Name       string            `json:"name"`
	PID        int               `json:"pid"`
	Nodes      []NodeStatus      `json:"nodes"`
	Links      []LinkStatus      `json:"links"`
	Partitions []string          `json:"partitions"`
	Procs      []ProcStatus      `json:"processes"`
	Drops      map[string]uint64 `json:"drops"`
}

// NodeStatus describes one node.
type NodeStatus struct {
	Name      string  `json:"name"`
	Address   string  `json:"address"`
	Netns     string  `json:"netns"`
	CPUs      float64 `json:"cpus"`
	MemoryMax int64   `json:"memory_bytes"`
	TxBytes   uint64  `json:"tx_bytes"`
	RxBytes   uint64  `json:"rx_bytes"`
	// Labels are the topology's free-form node attributes.
	Labels map[string]string `json:"labels,omitempty"`
	// Load is the latest sampler round's resource use; absent when no sampler runs.
	Load *NodeLoad `json:"load,omitempty"`
}

// Status returns a snapshot of nodes, links, partitions and processes.
func (tb *Testbed) Status() Status {
	st := Status{Name: tb.Name, PID: os.Getpid(), Links: tb.linkStatus(), Procs: tb.Procs(), Drops: tb.fab.Drops()}
	tb.mu.Lock()
	for _, n := range tb.nodes {
		c := tb.fab.NodeCounters(n.idx)
		ns := NodeStatus{Name: n.name, Address: n.addr.String(), Netns: n.ns, CPUs: n.cpus,
			MemoryMax: n.memory, TxBytes: c.TxBytes, RxBytes: c.RxBytes, Labels: tb.Topo.Nodes[n.idx].Labels}
		if l, ok := tb.load[n.name]; ok {
			ns.Load = &l
		}
		st.Nodes = append(st.Nodes, ns)
	}
	for _, f := range tb.faults {
		st.Partitions = append(st.Partitions, platform.DescribePartition(f))
	}
	tb.mu.Unlock()
	return st
}

type controlServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	// Shutdown is closed when a client asked the host to shut the testbed down.
	shutdown chan struct{}
}

func startControl(tb *Testbed) (*controlServer, error) {
	path := filepath.Join(tb.dir, controlSocket)
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	cs := &controlServer{ln: ln, done: make(chan struct{}), shutdown: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) { httpjson.Write(w, 200, tb.Status()) })
	mux.HandleFunc("GET /fabric", func(w http.ResponseWriter, r *http.Request) { httpjson.Write(w, 200, tb.FabricStats()) })
	mux.HandleFunc("GET /nodes/cpu", func(w http.ResponseWriter, r *http.Request) { httpjson.Write(w, 200, tb.NodesCPU()) })
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		if err := httpjson.Decode(w, r, maxControlBody, &f); err != nil {
			httpjson.Error(w, 400, err.Error())
			return
		}
		what, err := tb.Inject(f)
		if err != nil {
			httpjson.Error(w, 400, err.Error())
			return
		}
		httpjson.Write(w, 200, map[string]string{"result": what})
	})
	mux.HandleFunc("POST /procs", func(w http.ResponseWriter, r *http.Request) {
		var spec ProcSpec
		if err := httpjson.Decode(w, r, maxControlBody, &spec); err != nil {
			httpjson.Error(w, 400, err.Error())
			return
		}
		p, err := tb.Start(spec)
		if err != nil {
			httpjson.Error(w, 400, err.Error())
			return
		}
		httpjson.Write(w, 200, p.Status())
	})
	mux.HandleFunc("DELETE /procs/{name}", func(w http.ResponseWriter, r *http.Request) {
		grace := defaultStopGrace
		if v := r.URL.Query().Get("grace"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > maxStopGrace {
				httpjson.Error(w, 400, fmt.Sprintf("grace %q: want a duration from 0s to %s", v, maxStopGrace))
				return
			}
			grace = d
		}
		if err := tb.Remove(r.PathValue("name"), grace); err != nil {
			httpjson.Error(w, 400, err.Error())
			return
		}
		httpjson.Write(w, 200, map[string]string{"result": "stopped"})
	})
	mux.HandleFunc("POST /shutdown", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, 200, map[string]string{"result": "shutting down"})
		select {
		case <-cs.shutdown:
		default:
			close(cs.shutdown)
		}
	})
	cs.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { defer close(cs.done); _ = cs.srv.Serve(ln) }()
	return cs, nil
}

func (cs *controlServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = cs.srv.Shutdown(ctx)
	<-cs.done
}

// ShutdownRequested is closed when a client asked the hosting process to shut the testbed down.
func (tb *Testbed) ShutdownRequested() <-chan struct{} { return tb.ctl.shutdown }

// maxControlBody bounds a request to the control socket (a fault or a process spec).
const maxControlBody = 1 << 20

// maxControlAnswer bounds what the client reads of an answer (a status, the fabric's figures:
// a few KiB per link direction).
const maxControlAnswer = 64 << 20

// Client talks to a testbed's control socket.
type Client struct {
	name, sock string
	hc         *http.Client
}

// NewClient returns a client for testbed name in stateDir ("" = default).
func NewClient(stateDir, name string) *Client {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	sock := filepath.Join(stateDir, name, controlSocket)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return &Client{name: name, sock: sock, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *Client) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://testbed"+path, rd)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// No socket, or one nobody listens on (a daemon that was killed): nothing runs. Say so
		// rather than show the dial error.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("testbed %q is not running (no daemon listens at %s): start it with `continuum testbed up -f TOPOLOGY.yaml --name %s`; `continuum testbed status` lists the running ones", c.name, c.sock, c.name)
		}
		return fmt.Errorf("testbed %q is not answering on its control socket (is it up? `continuum testbed status`): %w", c.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxControlAnswer))
	if resp.StatusCode != 200 {
		var e httpjson.ErrorBody
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("testbed %q: %s: %s", c.name, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Status fetches the testbed's status.
func (c *Client) Status() (Status, error) {
	var st Status
	err := c.do("GET", "/status", nil, &st)
	return st, err
}

// FabricStats fetches the fabric's cumulative figures (Testbed.FabricStats).
func (c *Client) FabricStats() (fabric.Stats, error) {
	var st fabric.Stats
	err := c.do("GET", "/fabric", nil, &st)
	return st, err
}

// NodesCPU fetches the CPU its nodes have used (Testbed.NodesCPU).
func (c *Client) NodesCPU() (NodesCPU, error) {
	var n NodesCPU
	err := c.do("GET", "/nodes/cpu", nil, &n)
	return n, err
}

// Inject applies a fault and returns its description.
func (c *Client) Inject(f Fault) (string, error) {
	var out struct{ Result string }
	err := c.do("POST", "/fault", f, &out)
	return out.Result, err
}

// Start starts a process in a node.
func (c *Client) Start(spec ProcSpec) (ProcStatus, error) {
	var st ProcStatus
	err := c.do("POST", "/procs", spec, &st)
	return st, err
}

// Stop stops and forgets a process: SIGTERM, SIGKILL after 5 s.
func (c *Client) Stop(name string) error { return c.StopWithin(name, defaultStopGrace) }

// StopWithin is Stop with SIGKILL after grace (at most 10 minutes). It waits for the answer as
// long as the stop may take (the grace, then up to 10 s for the kill to be seen), not the
// client's usual 30 s.
func (c *Client) StopWithin(name string, grace time.Duration) error {
	long := *c
	long.hc = &http.Client{Transport: c.hc.Transport, Timeout: grace + 30*time.Second}
	return long.do("DELETE", "/procs/"+url.PathEscape(name)+"?grace="+grace.String(), nil, nil)
}

// defaultStopGrace is how long a stopped process has between SIGTERM and SIGKILL unless the
// request says (DELETE /procs/NAME?grace=D); maxStopGrace bounds what it may say.
const (
	defaultStopGrace = 5 * time.Second
	maxStopGrace     = 10 * time.Minute
)

// Shutdown asks the hosting process to tear the testbed down.
func (c *Client) Shutdown() error { return c.do("POST", "/shutdown", nil, nil) }

// DropCounts returns the fabric's cumulative packet drops by reason.
// Drops the veth pairs saw (see vethDrops) count as the fabric's read and write drops.
func (tb *Testbed) DropCounts() map[string]uint64 { return tb.withVethDrops(tb.fab.Drops()) }

// NodesCPU is the CPU every process in a testbed's nodes has used, by node, read at At:
// cumulative counters of the nodes' cgroups, which hold whatever runs in a node (a
// Kubernetes cluster's daemons and pods as much as a scenario's components). Two readings
// give how busy the nodes kept the host between them (NetworkLog.TakeWithNodes).
type NodesCPU struct {
	At    time.Time                `json:"at"`
	Nodes map[string]time.Duration `json:"nodes"`
}

// NodesCPU reads every node's cgroup CPU counter; a node whose counter cannot be read is left
// out.
func (tb *Testbed) NodesCPU() NodesCPU {
	out := NodesCPU{Nodes: make(map[string]time.Duration, len(tb.nodes))}
	for _, n := range tb.nodes {
		if v, err := tb.cg.cpuUsage(n.cgroup); err == nil {
			out.Nodes[n.name] = v
		}
	}
	out.At = time.Now()
	return out
}

// FabricStats are the fabric's cumulative figures: traffic, drops and lateness per link
// direction, how long packets waited to be read, and the fabric's own CPU time.
func (tb *Testbed) FabricStats() fabric.Stats {
	st := tb.fab.Stats()
	st.Drops = tb.withVethDrops(st.Drops)
	return st
}
