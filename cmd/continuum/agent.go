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

// newKubernetesAgentCmd is the one process of a node pod on the Kubernetes platform (`run
// --platform kubernetes` starts it; users do not), so it is hidden from the command list.
func newKubernetesAgentCmd() *cobra.Command {
	var listen string
	var probe bool
	var forwards []string
	opts := agent.Options{}
	c := &cobra.Command{
		Use:   "kubernetes-agent --listen 127.0.0.1:7946 --node NAME",
		Short: "The node agent of `run --platform kubernetes`: runs a scenario node's instances in its pod",
		Long: `The node agent of the Kubernetes platform, the one process of each node pod: it starts the
node's instances as processes, streams their output, moves files, dials from inside the pod and
measures it, for the runner, which reaches it through the API server's port-forward. It listens on
the pod's loopback only. SIGTERM stops every instance (SIGTERM, SIGKILL after --stop-grace), then
the agent. As the pod's PID 1 it also reaps the orphans its instances leave behind.`,
		Example: `  continuum kubernetes-agent --listen 127.0.0.1:7946 --node edge --state-dir /continuum/state
  continuum kubernetes-agent --probe --listen 127.0.0.1:7946   # the pod's startup probe
  continuum kubernetes-agent --forward 8080=10.244.0.7:8080     # a container pod's port at the node's address`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(forwards) > 0 { // started by the agent in a node pod: a container pod's ports
				return agent.Forward(cmd.Context(), forwards)
			}
			if probe { // the node pod's startup probe: is the agent listening?
				conn, err := net.DialTimeout("tcp", listen, 2*time.Second)
				if err != nil {
					return err
				}
				return conn.Close()
			}
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return fmt.Errorf("--listen %q: want host:port, e.g. 127.0.0.1:7946", listen)
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("--listen %q: the agent runs what it is asked to, so it listens on a loopback address only (reach it with a port-forward)", listen)
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
	f.StringVar(&listen, "listen", "127.0.0.1:7946", "loopback address to serve the agent API on")
	f.StringVar(&opts.Node, "node", "", "the scenario node this pod is (for logs and errors)")
	f.StringVar(&opts.StateDir, "state-dir", "", "where instances' stdout and stderr are kept (default <temp>/continuum-agent)")
	f.DurationVar(&opts.StopGrace, "stop-grace", 5*time.Second, "on SIGTERM, how long instances get between SIGTERM and SIGKILL")
	f.StringArrayVar(&forwards, "forward", nil, "only relay TCP from PORT on every address of this pod to HOST:PORT (PORT=HOST:PORT, repeatable) until SIGTERM: a container pod's ports at its node's address")
	f.BoolVar(&probe, "probe", false, "only check that an agent listens on --listen (exit 0) or not (exit 1), and exit")
	return c
}
