package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
)

func init() { commands = append(commands, newTestbedCmd) }

func newTestbedCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "testbed",
		Short: "Emulate an edge-to-cloud continuum: nodes, links with delay/loss/bandwidth, faults, limits",
		Example: `  continuum testbed up -f scenarios/topologies/three-tier.yaml --name lab
  continuum testbed exec --name lab device -- ping -c 3 edge
  continuum testbed fault --name lab partition --node cloud
  continuum testbed down --name lab`,
	}
	c.PersistentFlags().String("state-dir", "", "where testbeds record themselves (default $CONTINUUM_STATE_DIR or /run/continuum)")
	c.AddCommand(newTestbedUpCmd(), newTestbedDownCmd(), newTestbedStatusCmd(), newTestbedExecCmd(),
		newTestbedFaultCmd(), newTestbedStartCmd(), newTestbedStopCmd())
	return c
}

func stateDir(cmd *cobra.Command) string {
	d, _ := cmd.Flags().GetString("state-dir")
	if d == "" {
		d = testbed.DefaultStateDir()
	}
	return d
}

func newTestbedUpCmd() *cobra.Command {
	var file, name string
	var seed int64
	var foreground bool
	c := &cobra.Command{
		Use:   "up -f TOPOLOGY.yaml --name NAME",
		Short: "Create a testbed from a topology file; it keeps running in the background until `down`",
		Example: `  continuum testbed up -f topology.yaml --name lab
  continuum testbed up -f topology.yaml --name lab --foreground   # stay attached; Ctrl-C tears down`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			topo, err := testbed.LoadTopology(file)
			if err != nil {
				return err
			}
			if err := testbed.ValidName(name); err != nil {
				return err
			}
			if foreground {
				return serveTestbed(cmd, topo, name, seed)
			}
			return spawnTestbed(cmd, file, name, seed)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "topology YAML file (required)")
	c.Flags().StringVar(&name, "name", "", "testbed name (required; a-z, 0-9, '-')")
	c.Flags().Int64Var(&seed, "seed", 1, "seed for loss and jitter draws")
	c.Flags().BoolVar(&foreground, "foreground", false, "host the testbed in this process instead of a background daemon")
	_ = c.MarkFlagRequired("file")
	_ = c.MarkFlagRequired("name")
	return c
}

// serveTestbed hosts the testbed until Ctrl-C/SIGTERM or a `down` through the control socket.
// Everything is removed on the way out, including after a panic.
func serveTestbed(cmd *cobra.Command, topo *testbed.Topology, name string, seed int64) (err error) {
	tb, err := testbed.Up(topo, testbed.Options{Name: name, StateDir: stateDir(cmd), Seed: seed, Logger: cli.Logger()})
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			_ = tb.Down()
			panic(r)
		}
		if derr := tb.Down(); derr != nil && err == nil {
			err = derr
		}
	}()
	fmt.Fprintf(cmd.OutOrStdout(), "testbed %s up: %d nodes (pid %d)\n", name, len(tb.NodeNames()), os.Getpid())
	select {
	case <-cmd.Context().Done():
	case <-tb.ShutdownRequested():
	}
	return nil
}

// spawnTestbed starts `up --foreground` as a detached daemon and waits until it answers.
func spawnTestbed(cmd *cobra.Command, file, name string, seed int64) error {
	dir := stateDir(cmd)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, name, "state.json")); err == nil {
		return fmt.Errorf("testbed %q already exists; see `continuum testbed status --name %s`, or remove it with `continuum testbed down --name %s`", name, name, name)
	}
	logPath := filepath.Join(dir, name+".daemon.log")
	client := testbed.NewClient(dir, name)
	var st testbed.Status
	err := spawnDaemon("testbed", []string{"testbed", "up", "--foreground", "-f", file, "--name", name,
		"--seed", fmt.Sprint(seed), "--state-dir", dir}, logPath, 2*time.Minute, func(pid int) bool {
		s, err := client.Status()
		st = s
		return err == nil && s.PID == pid // not an older daemon of that name
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "testbed %s up: %d nodes, %d links (daemon pid %d, log %s)\n",
		name, len(st.Nodes), len(st.Links), st.PID, logPath)
	return nil
}

func newTestbedDownCmd() *cobra.Command {
	var name string
	var all bool
	c := &cobra.Command{
		Use:   "down (--name NAME | --all)",
		Short: "Remove a testbed (or all): processes, namespaces, interfaces, cgroups, state",
		Example: `  continuum testbed down --name lab
  continuum testbed down --all        # also after a crash: removes what the state files record`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := stateDir(cmd)
			if all == (name != "") {
				return errors.New("give exactly one of --name NAME or --all")
			}
			if all {
				names, err := testbed.DestroyAll(dir)
				fmt.Fprintf(cmd.OutOrStdout(), "removed %d testbed(s) %s\n", len(names), strings.Join(names, " "))
				_ = removeDaemonLogs(dir, names)
				return err
			}
			if err := testbed.Destroy(dir, name); err != nil {
				return err
			}
			_ = removeDaemonLogs(dir, []string{name})
			fmt.Fprintf(cmd.OutOrStdout(), "removed testbed %s\n", name)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "testbed to remove")
	c.Flags().BoolVar(&all, "all", false, "remove every testbed recorded in the state dir")
	return c
}

func removeDaemonLogs(dir string, names []string) error {
	for _, n := range names {
		_ = os.Remove(filepath.Join(dir, n+".daemon.log"))
	}
	return nil
}

func newTestbedStatusCmd() *cobra.Command {
	var name string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [--name NAME]",
		Short: "Show testbeds, or one testbed's nodes, links, partitions and processes",
		Example: `  continuum testbed status
  continuum testbed status --name lab --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if name == "" {
				states, err := testbed.List(stateDir(cmd))
				if err != nil {
					return err
				}
				if len(states) == 0 {
					fmt.Fprintln(out, "no testbeds")
				}
				for _, s := range states {
					fmt.Fprintf(out, "%s\t%d nodes\tpid %d\tcreated %s\n", s.Name, len(s.Netns), s.PID, s.Created.Format(time.RFC3339))
				}
				return nil
			}
			st, err := testbed.NewClient(stateDir(cmd), name).Status()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(out, st)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "testbed to show")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printStatus(out interface{ Write([]byte) (int, error) }, st testbed.Status) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "testbed %s (pid %d)\n\nNODE\tADDRESS\tCPUS\tMEMORY\tTX\tRX\n", st.Name, st.PID)
	for _, n := range st.Nodes {
		cpus, mem := "unlimited", "unlimited"
		if n.CPUs > 0 {
			cpus = fmt.Sprint(n.CPUs)
		}
		if n.MemoryMax > 0 {
			mem = spec.Bytes(n.MemoryMax).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d B\t%d B\n", n.Name, n.Address, cpus, mem, n.TxBytes, n.RxBytes)
	}
	fmt.Fprintf(w, "\nLINK\tSTATE\tDELAY\tJITTER\tLOSS\tBANDWIDTH\n")
	for _, l := range st.Links {
		state, bw := linkWords(l)
		fmt.Fprintf(w, "%s-%s\t%s\t%s\t%s\t%g%%\t%s\n", l.Between[0], l.Between[1], state, l.Delay, l.Jitter, l.Loss*100, bw)
	}
	if len(st.Partitions) > 0 {
		fmt.Fprintf(w, "\nACTIVE PARTITIONS\n")
		for _, p := range st.Partitions {
			fmt.Fprintf(w, "%s\n", p)
		}
	}
	if len(st.Procs) > 0 {
		fmt.Fprintf(w, "\nPROCESS\tNODE\tPID\tSTATE\tEXIT\tRESTARTS\tSERVICE\n")
		for _, p := range st.Procs {
			exit := "-"
			if p.State == "exited" {
				exit = fmt.Sprint(p.ExitCode)
				if p.Signal != "" {
					exit = p.Signal
				}
			}
			svc := "-"
			if p.Service != nil {
				svc = fmt.Sprintf("%s:%d", p.Service.Name, p.Service.Port)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", p.Name, p.Node, p.PID, p.State, exit, p.Restarts, svc)
		}
	}
	fmt.Fprintf(w, "\nDROPPED PACKETS\t%s\n", formatDrops(st.Drops))
	w.Flush()
}

// formatDrops writes the fabric's drop counts by reason as "loss 3, partition 0, ...", reasons
// in alphabetical order (not Go's map syntax).
func formatDrops(drops map[string]uint64) string {
	if len(drops) == 0 {
		return "none"
	}
	reasons := slices.Sorted(maps.Keys(drops))
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %d", r, drops[r])
	}
	return strings.Join(parts, ", ")
}

func newTestbedExecCmd() *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "exec --name NAME NODE -- CMD [ARGS...]",
		Short: "Run a command inside a node (its network namespace, hostname, /etc/hosts and cgroup)",
		Example: `  continuum testbed exec --name lab device -- ping -c 3 edge
  continuum testbed exec --name lab edge -- sh -c 'hostname; ip addr'`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: continuum testbed exec --name NAME NODE -- CMD [ARGS...]")
			}
			c, err := testbed.ExecCommand(stateDir(cmd), name, args[0], args[1:])
			if err != nil {
				return err
			}
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := c.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return cli.ExitCode(ee.ExitCode())
				}
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "testbed name (required)")
	_ = c.MarkFlagRequired("name")
	return c
}

func newTestbedFaultCmd() *cobra.Command {
	var name, node, component, link, groups, delay, jitter, loss, bandwidth string
	var cpus float64
	c := &cobra.Command{
		Use:   "fault --name NAME ACTION [flags]",
		Short: "Inject a fault: " + strings.Join(testbed.FaultActions, ", "),
		Example: `  continuum testbed fault --name lab partition --node cloud            # isolate a node
  continuum testbed fault --name lab partition --link edge,cloud       # cut one link
  continuum testbed fault --name lab partition --groups device,edge/cloud   # split into groups
  continuum testbed fault --name lab heal                               # undo all partitions
  continuum testbed fault --name lab link --link device,edge --delay 30ms --loss 1%
  continuum testbed fault --name lab kill --node edge                   # SIGKILL all its processes
  continuum testbed fault --name lab pause --node edge ; ... resume --node edge
  continuum testbed fault --name lab cpu --node edge --cpus 0.5
  continuum testbed fault --name lab restart --component echo`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := testbed.Fault{Action: args[0], Node: node, Component: component}
			if link != "" {
				f.Link = strings.Split(link, ",")
			}
			if groups != "" {
				for _, g := range strings.Split(groups, "/") {
					f.Groups = append(f.Groups, strings.Split(g, ","))
				}
			}
			var err error
			if f.Delay, err = optDuration(cmd, "delay", delay); err != nil {
				return err
			}
			if f.Jitter, err = optDuration(cmd, "jitter", jitter); err != nil {
				return err
			}
			if cmd.Flags().Changed("loss") {
				p, err := spec.ParsePercent(loss)
				if err != nil {
					return fmt.Errorf("--loss: %w", err)
				}
				f.Loss = &p
			}
			if cmd.Flags().Changed("bandwidth") {
				b, err := spec.ParseBandwidth(bandwidth)
				if err != nil {
					return fmt.Errorf("--bandwidth: %w", err)
				}
				f.Bandwidth = &b
			}
			if cmd.Flags().Changed("cpus") {
				f.CPUs = &cpus
			}
			res, err := testbed.NewClient(stateDir(cmd), name).Inject(f)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "testbed name (required)")
	c.Flags().StringVar(&node, "node", "", "node to isolate/kill/pause/resume/limit")
	c.Flags().StringVar(&component, "component", "", "component to kill/restart")
	c.Flags().StringVar(&link, "link", "", "link as A,B")
	c.Flags().StringVar(&groups, "groups", "", "groups for a split: a,b/c,d")
	c.Flags().StringVar(&delay, "delay", "", "new one-way delay (e.g. 20ms)")
	c.Flags().StringVar(&jitter, "jitter", "", "new jitter (e.g. 2ms)")
	c.Flags().StringVar(&loss, "loss", "", "new loss (e.g. 5%)")
	c.Flags().StringVar(&bandwidth, "bandwidth", "", "new bandwidth per direction, in tc's units: bit, kbit, Mbit, Gbit are bits/s, bps, kbps, Mbps, Gbps bytes/s (10Mbps = 80Mbit); 0 = unlimited")
	c.Flags().Float64Var(&cpus, "cpus", 0, "new CPU quota in cores (0 = unlimited)")
	_ = c.MarkFlagRequired("name")
	return c
}

func optDuration(cmd *cobra.Command, flag, v string) (*spec.Duration, error) {
	if !cmd.Flags().Changed(flag) {
		return nil, nil
	}
	d, err := spec.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return &d, nil
}

func newTestbedStartCmd() *cobra.Command {
	var name, as, dir, service string
	var env, attrs []string
	c := &cobra.Command{
		Use:   "start --name NAME NODE --as COMPONENT -- CMD [ARGS...]",
		Short: "Start a supervised component inside a node (logs in the testbed's state dir)",
		Example: `  continuum testbed start --name lab edge --as echo -- continuum echo --listen :8080
  continuum testbed start --name lab edge --as s1 --service dps:8080 --attr tier=edge -- continuum echo --listen :8080
  continuum testbed fault --name lab restart --component echo
  continuum testbed stop --name lab echo`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: continuum testbed start --name NAME NODE --as COMPONENT -- CMD [ARGS...]")
			}
			spec := testbed.ProcSpec{Name: as, Node: args[0], Args: args[1:], Env: env, Dir: dir}
			if service != "" {
				svc, err := testbed.ParseService(service, attrs)
				if err != nil {
					return err
				}
				spec.Service = svc
			} else if len(attrs) > 0 {
				return errors.New("--attr describes a service instance: give --service NAME:PORT too")
			}
			st, err := testbed.NewClient(stateDir(cmd), name).Start(spec)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started %s on %s (pid %d)\n", st.Name, st.Node, st.PID)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "testbed name (required)")
	c.Flags().StringVar(&as, "as", "", "component name (required)")
	c.Flags().StringVar(&dir, "dir", "", "working directory")
	c.Flags().StringArrayVar(&env, "env", nil, "extra environment KEY=VALUE (repeatable)")
	c.Flags().StringVar(&service, "service", "", "declare the component an instance of service NAME listening on PORT (NAME:PORT), for discovery by continuum proxy")
	c.Flags().StringArrayVar(&attrs, "attr", nil, "attribute KEY=VALUE of the service instance (repeatable; with --service)")
	_ = c.MarkFlagRequired("name")
	_ = c.MarkFlagRequired("as")
	return c
}

func newTestbedStopCmd() *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:     "stop --name NAME COMPONENT",
		Short:   "Stop a supervised component (SIGTERM, then SIGKILL after 5 s)",
		Example: `  continuum testbed stop --name lab echo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := testbed.NewClient(stateDir(cmd), name).Stop(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %s\n", args[0])
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "testbed name (required)")
	_ = c.MarkFlagRequired("name")
	return c
}

// linkWords are a link's state (up, or CUT by a partition) and bandwidth as status tables print
// them.
func linkWords(l testbed.LinkStatus) (state, bandwidth string) {
	state, bandwidth = "up", "unlimited"
	if !l.Up {
		state = "CUT"
	}
	if l.Bandwidth > 0 {
		bandwidth = spec.Bandwidth(l.Bandwidth).String()
	}
	return state, bandwidth
}
