package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/kubernetes/cluster"
	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform"
	"github.com/continuum-project/continuum/internal/setup"
	"github.com/continuum-project/continuum/internal/testbed"
)

func init() { commands = append(commands, newRunCmd) }

func newRunCmd() *cobra.Command {
	var opts experiment.Options
	var check, yes bool
	var (
		platformName string
		tb           testbed.Provider      // --platform testbed
		kube         kubeplatform.Provider // --platform kubernetes
		nodeMap      []string
		pullPolicy   string
		cleanup      string
		render       bool
	)
	c := &cobra.Command{
		Use:   "run SCENARIO.yaml [--set path=value]... [--out DIR] [--repeats N] [--only LABEL | --run N] [--check] [--platform kubernetes]",
		Short: "Run an experiment: platform + components + workloads + events -> results dir + report",
		Example: `  continuum run scenarios/quickstart.yaml
  continuum run scenarios/quickstart.yaml --set duration=60s --set workloads.load.config.rate=200
  continuum run scenarios/quickstart.yaml --repeats 5 --out /tmp/results
  continuum run --check scenarios/kv/partition.yaml   # validate every sweep combination, start nothing
  continuum run --only etcd scenarios/kv/partition.yaml   # only the runs whose sweep value is etcd
  continuum run --run 2 scenarios/kv/partition.yaml       # only run 002 (numbers as --check lists them)
  continuum run --platform kubernetes --kubeconfig ~/.kube/config scenarios/quickstart.yaml
  continuum run --platform kubernetes --check --render scenarios/quickstart.yaml   # the objects, as YAML
  continuum run --platform kubernetes --cleanup run4242-001   # delete what a crashed run left`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cleanup != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Repeats < 0 {
				return fmt.Errorf("--repeats %d: want the number of runs of each combination, at least 1 (0, the default, keeps the scenario's repeats)", opts.Repeats)
			}
			switch platformName {
			case testbed.PlatformName:
				if render {
					return fmt.Errorf("--render is for --platform kubernetes (the testbed has no objects to show; `run --check` validates the scenario)")
				}
				if cleanup != "" {
					return fmt.Errorf("--cleanup is for --platform kubernetes (a testbed leaves nothing once its runner exits: `continuum testbed down` removes one that did)")
				}
				opts.Platform = tb
			case kubeplatform.PlatformName:
				if tb.StateDir != "" {
					return fmt.Errorf("--state-dir is the testbed's; with --platform kubernetes give --kubeconfig and --namespace")
				}
				m, err := parseNodeMap(nodeMap)
				if err != nil {
					return err
				}
				kube.NodeMap = m
				kc := kube.Kubeconfig
				if kc == "" {
					kc = os.Getenv("KUBECONFIG")
				}
				if kube.Containerd == "" { // a cluster of this host: its containerd takes local images
					kube.Containerd = cluster.ContainerdFor(kc)
				}
				// A multi-node cluster of this host: its links are its testbed's, where the
				// scenario's links are emulated.
				if fc, ok := cluster.FabricFor(kc); ok {
					kube.Fabric = &kubeplatform.Fabric{Testbed: fc.Testbed, StateDir: fc.TestbedStateDir, CgroupRoots: fc.CgroupRoots}
				}
				switch pullPolicy {
				case "", "IfNotPresent", "Always", "Never":
					kube.PullPolicy = corev1.PullPolicy(pullPolicy)
				default:
					return fmt.Errorf("--pull-policy %q: want IfNotPresent, Always or Never", pullPolicy)
				}
				if cleanup != "" {
					deleted, err := kube.Cleanup(cmd.Context(), cleanup)
					for _, d := range deleted {
						fmt.Fprintln(cmd.OutOrStdout(), "deleted", d)
					}
					if err == nil && len(deleted) == 0 {
						fmt.Fprintf(cmd.OutOrStdout(), "nothing of run %s to delete\n", cleanup)
					}
					return err
				}
				if render {
					if !check {
						return fmt.Errorf("--render goes with --check: it prints the objects instead of creating them")
					}
					kube.Render = cmd.OutOrStdout()
				}
				opts.Platform = kube
			default:
				return fmt.Errorf("--platform %q: want %s or %s", platformName, testbed.PlatformName, kubeplatform.PlatformName)
			}
			// The stacks the scenario's kinds need, before anything starts (or is checked, since
			// a kind's command line looks for what its stack installs). On a cluster the images
			// carry them.
			if platformName == testbed.PlatformName {
				needs, err := experiment.Stacks(args[0], opts) // opts.Warnings unset: Check or Execute print them
				if err != nil {
					return err
				}
				eo := setup.EnsureOptions{Who: "scenario " + args[0], Yes: yes, In: os.Stdin,
					Interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr), Out: cmd.ErrOrStderr()}
				if check {
					eo.NoInstall = true // --check installs nothing, $CONTINUUM_AUTO_SETUP=1 or not
				}
				if err := setup.Ensure(cmd.Context(), needs, eo); err != nil {
					return err
				}
				if check && len(needs) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: needs the stacks %s (installed)\n", args[0], strings.Join(needs, ", "))
				}
			}
			opts.Warnings = cmd.ErrOrStderr()
			if check {
				res, err := experiment.Check(args[0], opts)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s)\n", args[0], res.Summary())
				return nil
			}
			opts.Progress = cmd.ErrOrStderr()
			opts.Interactive = isTerminal(os.Stderr)
			opts.Logger = cli.QuietLogger()
			res, err := experiment.Execute(cmd.Context(), args[0], opts)
			if res != nil && res.Report != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "results: %s\nreport:  %s\n", res.Dir, res.Report)
			}
			if errors.Is(err, experiment.ErrInterrupted) {
				fmt.Fprintf(cmd.ErrOrStderr(), "interrupted: results so far are kept; the %s was removed\n", map[string]string{
					testbed.PlatformName: "testbed", kubeplatform.PlatformName: "run's objects in the cluster"}[platformName])
			}
			return err
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "install the setup stacks the scenario needs without asking (as $"+setup.AutoEnv+"=1); without it a missing stack stops the run at once, naming the continuum setup command to run (a terminal asks)")
	c.Flags().BoolVar(&check, "check", false, "only validate the scenario, every sweep combination and every instance's command line; start nothing")
	c.Flags().StringVar(&opts.Out, "out", "results", "parent directory for the results directory")
	c.Flags().StringArrayVar(&opts.Sets, "set", nil, "override a scenario value: path=value (repeatable)")
	c.Flags().IntVar(&opts.Repeats, "repeats", 0, "runs of each sweep combination, overriding the scenario's repeats (0: keep the scenario's)")
	c.Flags().StringVar(&opts.Select.Only, "only", "", "run only the sweep combinations matching LABEL: a swept value or its label, or PATH=VALUE; comma-separated terms must all match")
	c.Flags().IntVar(&opts.Select.Run, "run", 0, "run only run N of the sweep (run 00N; an unknown N lists the runs)")
	c.Flags().StringVar(&tb.StateDir, "state-dir", "", "testbed state dir (default $CONTINUUM_STATE_DIR or /run/continuum)")
	c.Flags().StringVar(&platformName, "platform", testbed.PlatformName, "where the scenario runs: testbed (this host) or kubernetes (a cluster; see docs/kubernetes.md)")
	c.Flags().StringVar(&kube.Kubeconfig, "kubeconfig", "", "kubernetes: the cluster's kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	c.Flags().StringVar(&kube.Namespace, "namespace", "", "kubernetes: an existing namespace for the runs' objects (default: a namespace per run, continuum-<run>, deleted with it)")
	c.Flags().StringVar(&kube.Image, "image", "", "kubernetes: the node pods' image (default "+kubeplatform.DefaultImage()+", from continuum image build)")
	c.Flags().StringVar(&kube.Containerd, "containerd", "", "kubernetes: the cluster's containerd socket on this host, to import container components' local images (OCI layouts, tarballs) through (default: for a cluster that continuum cluster up started, found from its kubeconfig)")
	c.Flags().StringVar(&pullPolicy, "pull-policy", "", "kubernetes: the image's pull policy: IfNotPresent (default), Always or Never")
	c.Flags().StringArrayVar(&nodeMap, "node-map", nil, "kubernetes: pin scenario node to cluster node, NODE=CLUSTER_NODE (repeatable; default: nodes labelled "+kubeplatform.LabelNode+"=NODE, or the only schedulable node)")
	c.Flags().BoolVar(&render, "render", false, "kubernetes, with --check: print the YAML of every object a run creates (validated by the cluster in a dry run when one is reachable)")
	c.Flags().StringVar(&cleanup, "cleanup", "", "kubernetes: delete every object run RUN left in the cluster (\"all\": every run's), then exit")
	c.Flags().DurationVar(&opts.SampleInterval, "sample-interval", 0, "resource sampling interval (default 1s)")
	return c
}

// parseNodeMap reads --node-map NODE=CLUSTER_NODE entries.
func parseNodeMap(entries []string) (map[string]string, error) {
	m := map[string]string{}
	for _, e := range entries {
		for _, part := range strings.Split(e, ",") {
			k, v, ok := strings.Cut(part, "=")
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("--node-map %q: want NODE=CLUSTER_NODE (e.g. edge=worker-1)", part)
			}
			if prev, dup := m[k]; dup && prev != v {
				return nil, fmt.Errorf("--node-map: node %s mapped twice (%s and %s)", k, prev, v)
			}
			m[k] = v
		}
	}
	return m, nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
