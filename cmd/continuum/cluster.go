package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/kubernetes/cluster"
	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/setup"
	"github.com/continuum-project/continuum/internal/tools"
)

func init() { commands = append(commands, newClusterCmd) }

func newClusterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cluster",
		Short: "A Kubernetes cluster on this machine: one node, or one per node of a testbed topology",
		Long: `A Kubernetes cluster on this machine, built from what ` + "`make setup`" + ` installs: the
control plane on a continuum kv member (or etcd), containerd with runc and the CNI bridge plugin,
kubelet, kube-proxy and CoreDNS. By default one node in the host's namespaces; with --topology or
--nodes one node per node of a testbed, whose emulated links carry all traffic between nodes
(pods', and the kubelets' to the API server in the control plane's node). Images are OCI
tarballs (` + "`continuum image build`" + `) imported at start: nothing is pulled. ` + "`down`" + ` leaves the host
as it was. See docs/kubernetes.md.`,
		Example: `  continuum image build --out images/          # the continuum image (also the pods' sandbox)
  continuum cluster up --image images/continuum.tar
  continuum cluster up --image images/continuum.tar --topology scenarios/proxy/topology.yaml
  export KUBECONFIG=$(continuum cluster status --kubeconfig)
  helm install continuum deploy/helm/continuum
  continuum cluster status
  continuum cluster down`,
	}
	c.PersistentFlags().String("state-dir", cluster.DefaultConfig().StateDir, "where the cluster keeps everything it writes")
	c.AddCommand(newClusterUpCmd(), newClusterDownCmd(), newClusterStatusCmd(), newClusterNodeCmd(), newClusterPauseCmd())
	return c
}

func clusterStateDir(cmd *cobra.Command) string {
	d, _ := cmd.Flags().GetString("state-dir")
	abs, err := filepath.Abs(d)
	if err != nil {
		return d
	}
	return abs
}

func newClusterUpCmd() *cobra.Command {
	cfg := cluster.DefaultConfig()
	var foreground, yes bool
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "up --image TARBALL [--image TARBALL ...]",
		Short: "Start the cluster; it keeps running in the background until `down`",
		Example: `  continuum cluster up --image images/continuum.tar --image images/python.tar
  continuum cluster up --image images/continuum.tar --store etcd --foreground   # Ctrl-C tears down
  continuum cluster up --image images/continuum.tar --nodes 3                   # n1..n3, links without delay
  continuum cluster up --image images/continuum.tar --topology topo.yaml --control-plane cloud
  continuum testbed fault --name $(continuum cluster status --testbed) link --link edge,cloud --delay 50ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkClusterFlags(cmd, cfg); err != nil {
				return err
			}
			cfg.StateDir = clusterStateDir(cmd)
			if cfg.Topology != "" {
				abs, err := filepath.Abs(cfg.Topology)
				if err != nil {
					return err
				}
				cfg.Topology = abs
			}
			if cfg.BinDir == "" {
				if err := setup.Ensure(cmd.Context(), []string{"kubernetes"}, setup.EnsureOptions{Who: "cluster up", Yes: yes,
					In: os.Stdin, Interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr), Out: cmd.ErrOrStderr()}); err != nil {
					return err
				}
				d, err := clusterBinDir(cfg.StateDir)
				if err != nil {
					return err
				}
				cfg.BinDir = d
			}
			if cfg.ContinuumBin == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				cfg.ContinuumBin = exe
			}
			for i, img := range cfg.Images {
				abs, err := filepath.Abs(img)
				if err != nil {
					return err
				}
				cfg.Images[i] = abs
			}
			if cfg.SandboxImage == "" {
				ref, err := cluster.SandboxFrom(cfg.Images)
				if err != nil {
					return err
				}
				cfg.SandboxImage = ref
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if foreground {
				return serveCluster(cmd, cfg)
			}
			return spawnCluster(cmd, cfg, timeout)
		},
	}
	f := c.Flags()
	var stores []string
	for _, st := range clusterstore.All() { // registered by the systems that provide them
		stores = append(stores, st.Name+" ("+st.Summary+")")
	}
	f.StringVar(&cfg.Store, "store", cfg.Store, "the control plane's store: "+strings.Join(stores, " or "))
	f.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "the Node's name")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", cfg.PodCIDR, "the pods' subnet (its first address is the bridge, the API server's and DNS's)")
	f.StringVar(&cfg.ServiceCIDR, "service-cidr", cfg.ServiceCIDR, "the Services' ClusterIP range")
	f.StringVar(&cfg.Bridge, "bridge", cfg.Bridge, "the pods' bridge interface")
	f.StringVar(&cfg.BinDir, "bin-dir", "", "where kube-apiserver, kubelet, coredns ... are (default: .tools/bin of this clone)")
	f.StringArrayVar(&cfg.Images, "image", nil, "OCI image tarball to import into containerd (repeatable)")
	f.StringVar(&cfg.SandboxImage, "sandbox-image", "", "image of the pods' sandbox containers (default: the continuum image among --image)")
	f.BoolVar(&foreground, "foreground", false, "supervise the cluster in this process instead of a background daemon")
	f.BoolVarP(&yes, "yes", "y", false, "install the kubernetes setup stack first if it is missing, without asking (as $"+setup.AutoEnv+"=1)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the cluster to be ready")
	f.StringVar(&cfg.Topology, "topology", "", "a topology file (nodes, links): one Kubernetes node per node, in a testbed of it")
	f.IntVar(&cfg.Nodes, "nodes", 0, "N: one Kubernetes node per node of a testbed of N nodes n1..nN, linked without delay")
	f.StringVar(&cfg.ControlPlane, "control-plane", "", "the node the control plane runs in (default: the first labelled tier=cloud, else cloud, else the first)")
	f.DurationVar(&cfg.NodeGracePeriod, "node-grace-period", 0, "how long a node may go unheard before it is NotReady (whole seconds, 5s to 1h; default Kubernetes' 50s)")
	f.DurationVar(&cfg.EvictionTimeout, "eviction-timeout", 0, "how long pods stay on a NotReady or unreachable node before they are evicted (whole seconds, 1s to 24h; default Kubernetes' 5m)")
	return c
}

// checkClusterFlags refuses the combinations of `cluster up` flags that cannot mean anything,
// naming the flags; what is wrong with their values the configuration's Validate names.
func checkClusterFlags(cmd *cobra.Command, cfg cluster.Config) error {
	f := cmd.Flags()
	multi := f.Changed("topology") || f.Changed("nodes")
	switch {
	case f.Changed("topology") && f.Changed("nodes"):
		return errors.New("--topology and --nodes: give one of them (a topology file names its nodes)")
	case f.Changed("nodes") && cfg.Nodes < 1:
		return fmt.Errorf("--nodes %d: want at least 1 (without --nodes the cluster is one node in the host's namespaces)", cfg.Nodes)
	case f.Changed("topology") && cfg.Topology == "":
		return errors.New("--topology: want a topology file")
	case f.Changed("control-plane") && !multi:
		return errors.New("--control-plane: only a cluster of --topology or --nodes has nodes to choose from")
	}
	if multi {
		for _, name := range []string{"node-name", "bridge"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s is the one-node cluster's: with --topology or --nodes the nodes are named as the topology's and each has a bridge of its own", name)
			}
		}
	}
	return nil
}

// serveCluster runs the cluster until Ctrl-C, SIGTERM (`cluster down`) or a daemon's exit, and
// removes everything on the way out.
func serveCluster(cmd *cobra.Command, cfg cluster.Config) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := cluster.Up(ctx, cfg, cli.Logger())
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster up in %s (pid %d)\nexport KUBECONFIG=%s\n", cfg.StateDir, os.Getpid(), cl.Kubeconfig())
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-cl.Failed():
		cli.Logger().Error("a cluster daemon exited; tearing down", "err", failed)
	}
	err = cl.Down(context.WithoutCancel(ctx))
	return errors.Join(failed, err)
}

// spawnCluster starts `cluster up --foreground` as a detached daemon and waits until the
// cluster is ready or the daemon exits.
func spawnCluster(cmd *cobra.Command, cfg cluster.Config, timeout time.Duration) error {
	if st, err := cluster.ReadStatus(cmd.Context(), cfg.StateDir); err == nil && st.Running {
		return fmt.Errorf("a cluster is already up in %s (pid %d); see `continuum cluster status`, or remove it with `continuum cluster down`", cfg.StateDir, st.PID)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.StateDir), 0o755); err != nil {
		return err
	}
	logPath := cfg.StateDir + ".daemon.log"
	args := []string{"cluster", "up", "--foreground", "--state-dir", cfg.StateDir, "--store", cfg.Store,
		"--pod-cidr", cfg.PodCIDR, "--service-cidr", cfg.ServiceCIDR, "--bin-dir", cfg.BinDir, "--sandbox-image", cfg.SandboxImage}
	for _, img := range cfg.Images {
		args = append(args, "--image", img)
	}
	switch {
	case cfg.Topology != "":
		args = append(args, "--topology", cfg.Topology)
	case cfg.Nodes > 0:
		args = append(args, "--nodes", strconv.Itoa(cfg.Nodes))
	default:
		args = append(args, "--node-name", cfg.NodeName, "--bridge", cfg.Bridge)
	}
	if cfg.ControlPlane != "" {
		args = append(args, "--control-plane", cfg.ControlPlane)
	}
	if cfg.NodeGracePeriod > 0 {
		args = append(args, "--node-grace-period", cfg.NodeGracePeriod.String())
	}
	if cfg.EvictionTimeout > 0 {
		args = append(args, "--eviction-timeout", cfg.EvictionTimeout.String())
	}
	var st *cluster.Status
	err := spawnDaemon("cluster", args, logPath, timeout, func(pid int) bool {
		s, err := cluster.ReadStatus(cmd.Context(), cfg.StateDir)
		st = s
		return err == nil && s.PID == pid && s.Ready
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster up in %s (daemon pid %d, log %s)\nexport KUBECONFIG=%s\n",
		cfg.StateDir, st.PID, logPath, st.Kubeconfig)
	return nil
}

func newClusterDownCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "down",
		Short:   "Stop the cluster and remove everything it made (processes, mounts, cgroups, bridge, rules, state)",
		Example: `  continuum cluster down`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := clusterStateDir(cmd)
			err := cluster.Down(cmd.Context(), dir)
			if cluster.IsNotRunning(err) {
				fmt.Fprintf(cmd.OutOrStdout(), "no cluster in %s\n", dir)
				return nil
			}
			if err != nil {
				return err
			}
			// The daemon's log, beside the state dir, goes with it (as a testbed's does).
			_ = os.Remove(dir + ".daemon.log")
			fmt.Fprintf(cmd.OutOrStdout(), "cluster in %s removed\n", dir)
			return nil
		},
	}
}

func newClusterStatusCmd() *cobra.Command {
	var kubeconfig, tb bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster: its supervisor, store, Node and pods",
		Example: `  continuum cluster status
  export KUBECONFIG=$(continuum cluster status --kubeconfig)
  continuum testbed status --name $(continuum cluster status --testbed)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := clusterStateDir(cmd)
			st, err := cluster.ReadStatus(cmd.Context(), dir)
			if err != nil {
				if cluster.IsNotRunning(err) {
					return fmt.Errorf("no cluster in %s: start one with `continuum cluster up`", dir)
				}
				return err
			}
			out := cmd.OutOrStdout()
			if kubeconfig {
				fmt.Fprintln(out, st.Kubeconfig)
				return nil
			}
			if tb {
				if st.Testbed == "" {
					return fmt.Errorf("the cluster in %s is one node in the host's namespaces: it has no testbed (bring it up with --topology or --nodes)", dir)
				}
				fmt.Fprintln(out, st.Testbed)
				return nil
			}
			state := "running"
			switch {
			case !st.Running:
				state = "not running (remove what it left with `continuum cluster down`)"
			case !st.Ready:
				state = "starting"
			}
			fmt.Fprintf(out, "cluster in %s: %s, pid %d, store %s, up since %s\nkubeconfig: %s\n",
				dir, state, st.PID, st.Store, st.Started.Format(time.RFC3339), st.Kubeconfig)
			if st.Testbed != "" {
				fmt.Fprintf(out, "testbed: %s (continuum testbed status --name %s), control plane in node %s\n", st.Testbed, st.Testbed, st.ControlPlane)
			}
			if st.APIError != "" {
				fmt.Fprintf(out, "API server: %s\n", st.APIError)
			}
			if st.TestbedError != "" {
				fmt.Fprintf(out, "testbed: %s\n", st.TestbedError)
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, n := range st.Nodes {
				since := ""
				if !n.ReadySince.IsZero() {
					since = " since " + n.ReadySince.Local().Format(time.TimeOnly)
				}
				var labels []string
				for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
					labels = append(labels, k+"="+n.Labels[k])
				}
				ready := strconv.FormatBool(n.Ready)
				if !st.NodesListed {
					ready = "?" // the API server did not say
				}
				fmt.Fprintf(w, "node\t%s\tready=%s%s\t%s\tpods %s\t%s\n", n.Name, ready, since, n.Address, n.PodCIDR, strings.Join(labels, ","))
				if len(n.Exited) > 0 {
					fmt.Fprintf(w, "\t%s\texited: %s (continuum cluster node restart %s)\n", n.Name, strings.Join(n.Exited, ", "), n.Name)
				}
			}
			for _, l := range st.Links {
				state, bw := linkWords(l)
				fmt.Fprintf(w, "link\t%s-%s\t%s\tdelay %s\tjitter %s\tloss %g%%\tbandwidth %s\n", l.Between[0], l.Between[1], state,
					l.Delay, l.Jitter, l.Loss*100, bw)
			}
			for _, p := range st.Partitions {
				fmt.Fprintf(w, "partition\t%s\n", p)
			}
			for _, p := range st.Pods {
				fmt.Fprintf(w, "pod\t%s/%s\t%s\t%d/%d ready\n", p.Namespace, p.Name, p.Phase, p.Ready, p.Containers)
			}
			w.Flush()
			if !st.Running {
				return cli.ExitCode(1) // said above
			}
			return nil
		},
	}
	c.Flags().BoolVar(&kubeconfig, "kubeconfig", false, "print only the administrator's kubeconfig path")
	c.Flags().BoolVar(&tb, "testbed", false, "print only the name of the testbed the nodes live in (the NAME of continuum testbed fault --name NAME)")
	return c
}

func newClusterNodeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "Act on a node of a multi-node cluster (its faults are the testbed's: continuum testbed fault)",
		Example: `  continuum testbed fault --name $(continuum cluster status --testbed) kill --node edge
  continuum cluster node restart edge`,
	}
	var wait time.Duration
	restart := &cobra.Command{
		Use:   "restart NODE",
		Short: "Start a node's daemons again, as a reboot would (after `continuum testbed fault kill --node NODE`)",
		Long: `Stops what still runs of the node's daemons and starts them all again: on the control plane's
node the store and the API server, then containerd, CoreDNS, the kubelet and kube-proxy. Then
waits until the Node is Ready (--wait 0: not at all). The node's pods come back as their
controllers and the kubelet decide, as after a reboot.`,
		Example: `  continuum testbed fault --name $(continuum cluster status --testbed) kill --node edge
  continuum cluster node restart edge`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := clusterStateDir(cmd)
			start := time.Now()
			what, began, err := cluster.RestartNode(cmd.Context(), dir, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, what)
			if wait <= 0 {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			if err := cluster.WaitNodeReady(ctx, dir, args[0], began); err != nil {
				return fmt.Errorf("node %s not Ready %s after the restart: %w", args[0], time.Since(start).Round(time.Second), err)
			}
			fmt.Fprintf(out, "node %s Ready %s after the restart began\n", args[0], time.Since(start).Round(100*time.Millisecond))
			return nil
		},
	}
	restart.Flags().DurationVar(&wait, "wait", 3*time.Minute, "how long to wait for the Node to be Ready (0: do not wait)")
	c.AddCommand(restart)
	return c
}

// newClusterPauseCmd is the pods' sandbox process (the "pause" container), run from the
// continuum image so that no other image is needed: it holds the pod's namespaces, reaps the
// orphans of a shared process namespace, and exits on SIGTERM or SIGINT (as PID 1, a signal
// without a handler would be ignored).
func newClusterPauseCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "pause",
		Short:  "The pods' sandbox process: wait for SIGTERM, reaping orphans",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
			for s := range sigs {
				if s != syscall.SIGCHLD {
					return nil
				}
				for {
					pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
					if pid <= 0 || err != nil {
						break
					}
				}
			}
			return nil
		},
	}
}

// clusterBinDir is the directory of the Kubernetes binaries, CoreDNS and etcd: a clone's
// .tools/bin holds them all. Outside a clone the setup cache keeps them in directories of their
// own (kubernetes-*, coredns-*, etcd-*): they are then linked into <state dir>/bin, one
// directory as the cluster expects.
func clusterBinDir(stateDir string) (string, error) {
	d, err := controlplane.FindBinDir()
	if err != nil {
		return "", err
	}
	extra := map[string]string{}
	for _, name := range []string{"coredns", "etcd"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			continue
		}
		p, ok := tools.Find(tools.Bin(name))
		if !ok {
			return "", fmt.Errorf("%s not found beside %s nor in %s: run `continuum setup kubernetes` in a clone", name, d, tools.Searched())
		}
		extra[name] = p
	}
	if len(extra) == 0 {
		return d, nil
	}
	bin := filepath.Join(stateDir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		extra[e.Name()] = filepath.Join(d, e.Name())
	}
	for name, target := range extra {
		link := filepath.Join(bin, name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue // linked by an earlier `up` (perhaps of a cluster still running)
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return "", err
		}
	}
	return bin, nil
}
