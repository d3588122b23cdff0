package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/agent"
)

func init() { commands = append(commands, newKubernetesAgentCmd) }

// newKubernetesAgentCmd is the node agent the Kubernetes platform runs in each node pod; the
// runner reaches it through a port-forward, so it is hidden from the command list.
func newKubernetesAgentCmd() *cobra.Command {
	var listen string
	opts := agent.Options{}
	c := &cobra.Command{
		Use:   "kubernetes-agent --listen 127.0.0.1:7946 --node NAME",
		Short: "The node agent of `run --platform kubernetes`: runs a scenario node's instances in its pod",
		Long: `The node agent of the Kubernetes platform. It runs inside a node pod and serves, on an address
that only a port-forward reaches, what the runner asks of the node: start, signal and stop its
instances, follow their output, copy files in and out, dial from inside the pod and measure it.
On SIGTERM it stops every instance and exits.`,
		Example: `  continuum kubernetes-agent --listen 127.0.0.1:7946 --node edge1 --state-dir /tmp/continuum-agent`,
		Hidden:  true,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Node == "" {
				return fmt.Errorf("--node is required: the scenario node this pod runs")
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			opts.Logger = cli.Logger()
			opts.Reap = os.Getpid() == 1 // the container's entrypoint: orphans come to it
			return agent.Serve(cmd.Context(), ln, opts)
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:7946", "address to serve the agent API on (keep it on 127.0.0.1: only a port-forward should reach it)")
	f.StringVar(&opts.Node, "node", "", "the scenario node this pod runs (for logs and errors)")
	f.StringVar(&opts.StateDir, "state-dir", "", "where the instances' stdout/stderr files are kept (default $TMPDIR/continuum-agent)")
	f.DurationVar(&opts.StopGrace, "stop-grace", 5*time.Second, "on exit, how long instances get between SIGTERM and SIGKILL")
	return c
}
