package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/freeport"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ControlPlane is a running kube-apiserver and, as configured, kube-controller-manager and
// kube-scheduler. Its methods may be called from several goroutines.
type ControlPlane struct {
	cfg         Config
	pki         *pki
	server      string // https://<Config.Address>:port
	kubeconfigs map[string]string
	rest        *rest.Config
	client      kubernetes.Interface

	// picked says which ports Start chose (Config left them 0).
	picked struct{ apiserver, cm, scheduler bool }

	supervisors sync.WaitGroup // the goroutines restarting the controller-manager and scheduler
	stopping    chan struct{}  // closed by Stop

	mu        sync.Mutex // guards the fields below (StartAPIServer and supervisors replace processes)
	apiserver *process
	cm        *process // nil unless Config.ControllerManager
	scheduler *process // nil unless Config.Scheduler
	restarts  map[string]int
	stopped   bool
}

// Start generates the PKI and kubeconfigs under cfg.Dir, starts kube-apiserver against
// cfg.EtcdServers and waits for its /readyz, then starts the controller-manager and scheduler
// (if configured) and waits for their /healthz; those two are started again whenever they exit,
// as a kubelet would. ctx bounds the start only; the processes run until Stop. On error
// nothing is left running.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("control plane config: %w", err)
	}
	if cfg.BinDir == "" {
		d, err := FindBinDir()
		if err != nil {
			return nil, err
		}
		cfg.BinDir = d
	}
	need := []string{APIServerBinary}
	if cfg.ControllerManager {
		need = append(need, ControllerManagerBinary)
	}
	if cfg.Scheduler {
		need = append(need, SchedulerBinary)
	}
	if err := checkBinaries(cfg.BinDir, need...); err != nil {
		return nil, fmt.Errorf("kubernetes binaries in %s: %w (run `continuum setup kubernetes` or set $%s)", cfg.BinDir, err, BinDirEnv)
	}
	for _, d := range []string{cfg.Dir, filepath.Join(cfg.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("control plane dir: %w", err)
		}
	}
	var err error
	cp := &ControlPlane{cfg: cfg, stopping: make(chan struct{}), restarts: map[string]int{}}
	for _, pp := range []struct {
		port   *int
		picked *bool
	}{{&cp.cfg.APIServerPort, &cp.picked.apiserver}, {&cp.cfg.ControllerManagerPort, &cp.picked.cm}, {&cp.cfg.SchedulerPort, &cp.picked.scheduler}} {
		if *pp.port == 0 {
			if *pp.port, err = freeport.Port(); err != nil {
				return nil, fmt.Errorf("free port: %w", err)
			}
			*pp.picked = true
		}
	}
	_, svcNet, _ := net.ParseCIDR(cfg.ServiceClusterIPRange) // checked by Validate
	sans := []net.IP{firstServiceIP(svcNet)}
	if cfg.Address != "" {
		sans = append(sans, net.ParseIP(cfg.Address))
	}
	sans = append(sans, cfg.ExtraSANs...)
	if cp.pki, err = newPKI(filepath.Join(cfg.Dir, "pki"), sans...); err != nil {
		return nil, err
	}
	if err := cp.serveOn(); err != nil {
		return nil, err
	}
	if err := cp.launch(ctx, cp.apiserverComponent(cp.picked.apiserver)); err != nil {
		return nil, err
	}
	if err := cp.startOthers(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

// serveOn points the kubeconfigs and clients at the apiserver's port.
func (cp *ControlPlane) serveOn() error {
	cp.server = "https://" + net.JoinHostPort(cp.cfg.address(), strconv.Itoa(cp.cfg.APIServerPort))
	var err error
	if cp.kubeconfigs, err = writeKubeconfigs(cp.cfg.Dir, cp.server, cp.pki); err != nil {
		return err
	}
	cp.rest = restConfig(cp.server, cp.pki)
	cp.rest.Dial = cp.cfg.Dial
	if cp.client, err = kubernetes.NewForConfig(cp.rest); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	return nil
}

// component is one process of the control plane: how to start it and how to know it is up.
type component struct {
	name   string
	port   *int // in cp.cfg
	picked bool // the port was picked here: another may be picked if it was taken meanwhile
	args   func() []string
	health func() string // URL answering 200 once the component is up
	admin  bool          // ask health with the admin's certificate
	slot   **process     // where the running process is kept (under cp.mu)
	moved  func() error  // called after the port changed
}

func (cp *ControlPlane) apiserverComponent(picked bool) component {
	return component{
		name: APIServerBinary, port: &cp.cfg.APIServerPort, picked: picked, args: cp.apiserverArgs,
		health: func() string { return cp.server + "/readyz?verbose" }, admin: true, slot: &cp.apiserver, moved: cp.serveOn,
	}
}

// launch starts c and waits until it is healthy. A port picked here can be taken by another
// process between the pick and the component's bind (the kernel hands out the same ephemeral
// ports to outgoing connections); then it picks another and starts again, up to 3 times.
func (cp *ControlPlane) launch(ctx context.Context, c component) error {
	for attempt := 1; ; attempt++ {
		cp.mu.Lock()
		if cp.stopped {
			cp.mu.Unlock()
			return errors.New("the control plane was stopped")
		}
		if pr := *c.slot; pr != nil && !pr.exited() {
			cp.mu.Unlock()
			return fmt.Errorf("%s is already running", c.name)
		}
		argv, err := cp.argv(c)
		if err != nil {
			cp.mu.Unlock()
			return err
		}
		pr, err := startProcess(c.name, cp.LogPath(c.name), argv)
		if err != nil {
			cp.mu.Unlock()
			return err
		}
		*c.slot = pr
		cp.mu.Unlock()
		err = cp.waitHealthy(ctx, pr, c.health(), c.admin)
		if err == nil {
			return nil
		}
		pr.kill()
		if !c.picked || attempt == 3 || !strings.Contains(pr.logTail(logTailLines), "address already in use") {
			return err
		}
		if *c.port, err = freeport.Port(); err != nil {
			return fmt.Errorf("free port: %w", err)
		}
		if c.moved != nil {
			if err := c.moved(); err != nil {
				return err
			}
		}
	}
}

// startOthers starts the controller-manager and the scheduler side by side and waits for both.
func (cp *ControlPlane) startOthers(ctx context.Context) error {
	var cs []component
	healthz := func(port *int) func() string {
		return func() string { return "https://127.0.0.1:" + strconv.Itoa(*port) + "/healthz?verbose" }
	}
	if cp.cfg.ControllerManager {
		cs = append(cs, component{name: ControllerManagerBinary, port: &cp.cfg.ControllerManagerPort, picked: cp.picked.cm,
			args: cp.controllerManagerArgs, health: healthz(&cp.cfg.ControllerManagerPort), slot: &cp.cm})
	}
	if cp.cfg.Scheduler {
		cs = append(cs, component{name: SchedulerBinary, port: &cp.cfg.SchedulerPort, picked: cp.picked.scheduler,
			args: cp.schedulerArgs, health: healthz(&cp.cfg.SchedulerPort), slot: &cp.scheduler})
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			if errs[i] = cp.launch(ctx, c); errs[i] == nil {
				cp.supervise(c)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// argv is c's command line as started: Config.Wrap's, if set.
func (cp *ControlPlane) argv(c component) ([]string, error) {
	argv := c.args()
	if cp.cfg.Wrap == nil {
		return argv, nil
	}
	w, err := cp.cfg.Wrap(argv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return w, nil
}

// restartDelay is how long a supervised component stays down before it is started again.
const restartDelay = time.Second

// supervise starts c's process again whenever it exits, until Stop. The controller-manager
// exits when the apiserver is unreachable while it builds its controllers (after an apiserver
// restart, say); in a cluster the kubelet restarts it, here this does. Each start appends
// its command line to the component's log, so restarts show there.
func (cp *ControlPlane) supervise(c component) {
	cp.supervisors.Go(func() {
		for {
			cp.mu.Lock()
			pr := *c.slot
			cp.mu.Unlock()
			select {
			case <-cp.stopping:
				return
			case <-pr.done:
			}
			select {
			case <-cp.stopping:
				return
			case <-time.After(restartDelay):
			}
			cp.mu.Lock()
			if cp.stopped {
				cp.mu.Unlock()
				return
			}
			argv, err := cp.argv(c) // in the node it was started in, as launch did
			if err != nil {
				cp.mu.Unlock()
				return // its node is going down
			}
			next, err := startProcess(c.name, cp.LogPath(c.name), argv)
			if err != nil {
				cp.mu.Unlock()
				return // the binary is gone; the log says what ran last
			}
			*c.slot = next
			cp.restarts[c.name]++
			cp.mu.Unlock()
		}
	})
}

// Restarts is how many times a component (by binary name) was started again after it exited.
func (cp *ControlPlane) Restarts(binary string) int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.restarts[binary]
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same port, store and
// PKI, and waits for its /readyz. It is an error if it is running.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	return cp.launch(ctx, cp.apiserverComponent(false))
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL); the other components keep
// running and retry until it is back.
func (cp *ControlPlane) StopAPIServer() {
	cp.mu.Lock()
	pr := cp.apiserver
	cp.mu.Unlock()
	if pr != nil {
		pr.stop()
	}
}

// Stop stops every component, the apiserver last. Safe to call more than once.
func (cp *ControlPlane) Stop() {
	cp.mu.Lock()
	if !cp.stopped {
		cp.stopped = true
		close(cp.stopping)
	}
	procs := []*process{cp.scheduler, cp.cm, cp.apiserver}
	cp.mu.Unlock()
	cp.supervisors.Wait() // no restart can begin after stopped is set; wait for those under way
	var wg sync.WaitGroup
	for _, pr := range procs[:2] {
		if pr != nil {
			wg.Go(pr.stop)
		}
	}
	wg.Wait()
	if procs[2] != nil {
		procs[2].stop()
	}
}

// Server is the apiserver's URL (https://<Config.Address>:port).
func (cp *ControlPlane) Server() string { return cp.server }

// BinDir is the directory the binaries were started from (Config.BinDir or FindBinDir's).
func (cp *ControlPlane) BinDir() string { return cp.cfg.BinDir }

// Kubeconfig is the path of the admin kubeconfig (system:masters), for kubectl, helm and
// client-go.
func (cp *ControlPlane) Kubeconfig() string { return cp.kubeconfigs["admin"] }

// RESTConfig returns a copy of the admin's client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(cp.rest) }

// Client is a clientset with the admin's identity.
func (cp *ControlPlane) Client() kubernetes.Interface { return cp.client }

// LogPath is the log file of a component, named by its binary (APIServerBinary, ...).
func (cp *ControlPlane) LogPath(binary string) string {
	return filepath.Join(cp.cfg.Dir, "logs", binary+".log")
}

// LogTail returns the last n lines of a component's log, for a failing test's output.
func (cp *ControlPlane) LogTail(binary string, n int) string {
	return (&process{logPath: cp.LogPath(binary)}).logTail(n)
}

func (cp *ControlPlane) apiserverArgs() []string {
	p := cp.pki
	args := []string{
		filepath.Join(cp.cfg.BinDir, APIServerBinary),
		"--etcd-servers=" + strings.Join(cp.cfg.EtcdServers, ","),
		"--storage-backend=etcd3",
		"--etcd-prefix=" + cp.cfg.EtcdPrefix,
		"--bind-address=" + cp.cfg.address(),
		"--secure-port=" + strconv.Itoa(cp.cfg.APIServerPort),
		// The address is what the kubernetes Service points at. The default "lease"
		// reconciler refuses a loopback address (the Endpoints would be unreachable from pods
		// anyway), so the reconciler is off; the cluster keeps the Service's endpoints itself.
		"--advertise-address=" + cp.cfg.address(),
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + cp.cfg.ServiceClusterIPRange,
		// Node,RBAC as clusters run it: the controller-manager and scheduler then act with
		// their bootstrap roles, so a missing permission fails here as it would in production.
		"--authorization-mode=Node,RBAC",
		"--client-ca-file=" + p.caFile,
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--service-account-key-file=" + p.saPublicKey,
		"--service-account-signing-key-file=" + p.saPrivateKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--cert-dir=" + filepath.Join(cp.cfg.Dir, "apiserver"),
		"--allow-privileged=true",
		"--profiling=false",
		// Calls to kubelets (logs, exec) go to the Node's InternalIP, which is where kubelet
		// listens, with a client certificate kubelet checks against the cluster's CA.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--kubelet-client-certificate=" + p.kubeletClientCert,
		"--kubelet-client-key=" + p.kubeletClientKey,
	}
	return append(args, cp.cfg.APIServerArgs...)
}

// commonArgs are the flags the controller-manager and the scheduler share. Leader election is
// off: each runs once, and with it on a restarted component would wait out its predecessor's
// lease (15 s) before doing anything.
func (cp *ControlPlane) commonArgs(binary, identity string, port int) []string {
	kc := cp.kubeconfigs[identity]
	return []string{
		filepath.Join(cp.cfg.BinDir, binary),
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
	}
}

func (cp *ControlPlane) controllerManagerArgs() []string {
	p := cp.pki
	args := append(cp.commonArgs(ControllerManagerBinary, "controller-manager", cp.cfg.ControllerManagerPort),
		"--cert-dir="+filepath.Join(cp.cfg.Dir, "controller-manager"),
		// Each controller acts as its own service account, which bootstrap RBAC grants the
		// controller's permissions to; the tokens are signed with the key the apiserver checks.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p.saPrivateKey,
		"--root-ca-file="+p.caFile,
		"--cluster-signing-cert-file="+p.caFile,
		"--cluster-signing-key-file="+p.caKeyFile,
		"--service-cluster-ip-range="+cp.cfg.ServiceClusterIPRange,
	)
	return append(args, cp.cfg.ControllerManagerArgs...)
}

func (cp *ControlPlane) schedulerArgs() []string {
	args := cp.commonArgs(SchedulerBinary, "scheduler", cp.cfg.SchedulerPort)
	return append(args, cp.cfg.SchedulerArgs...)
}

// firstServiceIP is the range's first host address, which the apiserver gives the kubernetes
// Service (and so must be in its serving certificate).
func firstServiceIP(n *net.IPNet) net.IP {
	ip := make(net.IP, 4)
	copy(ip, n.IP.To4())
	ip[3]++
	return ip
}
