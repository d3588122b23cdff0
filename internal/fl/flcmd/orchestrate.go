package flcmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/fl/orchestrator"
	"github.com/continuum-project/continuum/internal/fl/plan"
	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/pyenv"
)

// OrchestrateFlags are `continuum fl orchestrate`'s flags; the fl-orchestrator kind renders its
// command line from the same struct.
type OrchestrateFlags struct {
	Listen    string
	Advertise string
	Platform  string
	Local     bool
	Topology  string
	Place     string
	Out       string
	Poll      time.Duration
	BasePort  int
	Train     bool
	Exclude   []string
	Group     bool
	// TokenFile holds the API token ("": OUT/secrets/api-token, generated on the first start).
	TokenFile string
	JobFlags
}

// TokenFile is where an orchestrator whose output directory is out keeps its API token unless
// told otherwise (--token-file): the file `fl train` and the fl-job kind read.
func TokenFile(out string) string { return filepath.Join(out, "secrets", "api-token") }

// DefaultOrchestrateFlags are the orchestrator's defaults.
func DefaultOrchestrateFlags() OrchestrateFlags {
	return OrchestrateFlags{Listen: "0.0.0.0:7070", Out: "fl-out", Poll: 500 * time.Millisecond, BasePort: 8080, JobFlags: DefaultJobFlags()}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *OrchestrateFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Listen, "listen", f.Listen, "address of the HTTP API (jobs, services' reports, the model repository)")
	fs.StringVar(&f.Advertise, "advertise", f.Advertise, "URL the FL services reach the API at (default: http://<this host>:<port>)")
	fs.StringVar(&f.Platform, "platform", f.Platform, "platform endpoint to deploy the services on (testbed:<name>@<state dir>; a scenario's kind passes its run's)")
	fs.BoolVar(&f.Local, "local", f.Local, "run the services as processes on this host instead (every node is 127.0.0.1)")
	fs.StringVar(&f.Topology, "topology", f.Topology, "the FL nodes from the seed's CSV (id,role,\"peer:cost,...\",\"class:count,...\") instead of the platform's node labels")
	fs.StringVar(&f.Place, "place", f.Place, "with --topology: the platform node every service runs on (the seed's simulated infrastructure); default: the node of the same name")
	fs.StringVar(&f.Out, "out", f.Out, "output directory: fl-events.jsonl, rounds.csv, model-repo/, services/")
	fs.DurationVar(&f.Poll, "poll", f.Poll, "how often the nodes are observed")
	fs.IntVar(&f.BasePort, "base-port", f.BasePort, "the i-th node's service listens on base-port+i, its control API on base-port+1000+i")
	fs.StringSliceVar(&f.Exclude, "exclude", f.Exclude, "nodes kept out of training until a PUT /nodes/excluded without them (a node that joins later)")
	fs.BoolVar(&f.Group, "group-clients", f.Group, "run the clients of each host in one process (hundreds of clients: PyTorch's memory shared); a change to one restarts its host's group")
	fs.StringVar(&f.TokenFile, "token-file", f.TokenFile, "file holding the API token callers send as Authorization: Bearer TOKEN (default OUT/secrets/api-token, generated on the first start, 0600)")
	fs.BoolVar(&f.Train, "train", f.Train, "submit the job the job flags describe at once, and exit when it ends (otherwise jobs come through POST /jobs or continuum fl train)")
	f.JobFlags.Bind(fs)
}

func newOrchestrateCmd() *cobra.Command {
	flags := DefaultOrchestrateFlags()
	cmd := &cobra.Command{
		Use:   "orchestrate",
		Short: "The federated-learning orchestrator: configures, deploys and reconfigures Flower services",
		Long: `Serves the orchestrator's HTTP API on --listen and runs training jobs (POST /jobs, or ` + "`continuum fl train`" + `,
or --train with the job flags here): it reads the FL nodes' features (the platform's node labels
fl/type, comm/<peer>, data/<class>, fl/fail-prob; or --topology), picks a configuration (--strategy;
epochs and local rounds by the budget rule), starts the Flower services (python/src/continuum_fl in
.tools/venv-fl) on the nodes, and watches them: a node that leaves (its service exits, or a partition
cuts it off) or joins is handled by changing only what the change touches. The global model is kept
in the model repository (<out>/model-repo) after every round; a global aggregator started again
continues from it. See docs/fl.md.`,
		Example: `  continuum fl orchestrate --local --topology scenarios/fl/seed-topology.csv --train --rounds 5
  continuum fl orchestrate --platform testbed:fl@/run/continuum --listen 0.0.0.0:7070 --out results/fl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("CONTINUUM_FL_PYTHON") == "" { // the fl stack's venv, unless told another
				if err := cli.NeedStacks(cmd, "fl"); err != nil {
					return err
				}
			}
			return runOrchestrate(cmd.Context(), flags)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

func runOrchestrate(ctx context.Context, f OrchestrateFlags) error {
	log := cli.Logger()
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	if f.Local == (f.Platform != "") {
		return errors.New("say where the services run: --platform ENDPOINT (a testbed) or --local (this host), not both")
	}
	if f.Train {
		if err := f.Job.Validate(); err != nil {
			return err
		}
	}
	py, err := pyenv.Find(pyenv.Venv{Dir: "venv-fl", Package: "continuum_fl", PythonEnv: "CONTINUUM_FL_PYTHON", SrcEnv: "CONTINUUM_PYTHON_SRC", Stack: "fl"})
	if err != nil {
		return err
	}
	out, err := filepath.Abs(f.Out)
	if err != nil {
		return err
	}
	tokenFile := f.TokenFile
	if tokenFile == "" {
		tokenFile = TokenFile(out)
	}
	token, generated, err := httpauth.LoadOrCreateToken(tokenFile)
	if err != nil {
		return fmt.Errorf("--token-file: %w", err)
	}
	if generated {
		logf("generated the API token into %s (0600): callers send it as Authorization: Bearer TOKEN", tokenFile)
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.Listen, err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := orchestrator.Config{Python: py, Out: out, Poll: f.Poll, BasePort: f.BasePort, Logf: logf, API: f.Advertise,
		GroupClients: f.Group, Options: plan.DefaultOptions(), Token: token}
	var local *orchestrator.LocalRunner
	if f.Local {
		local = &orchestrator.LocalRunner{LogDir: filepath.Join(out, "logs")}
		defer local.StopAll()
		cfg.Runner = local
		if cfg.API == "" {
			cfg.API = fmt.Sprintf("http://127.0.0.1:%d", port)
		}
		if f.Topology == "" {
			return errors.New("--local needs --topology (the FL nodes' features): there are no platform node labels to read")
		}
	} else {
		p, err := platform.InstancesFor(f.Platform)
		if err != nil {
			return fmt.Errorf("--platform: the orchestrator cannot deploy there: %w", err)
		}
		cfg.Runner = &orchestrator.PlatformRunner{Platform: p, LogDir: filepath.Join(out, "logs")}
		cfg.Members = orchestrator.PlatformMembers(p)
		if cfg.API == "" {
			host, _ := os.Hostname()
			cfg.API = fmt.Sprintf("http://%s:%d", host, port)
		}
	}
	if f.Topology != "" {
		cfg.Members = orchestrator.CSVMembers(f.Topology, nil, f.Place)
	}
	o, err := orchestrator.New(cfg)
	if err != nil {
		return err
	}
	defer o.Close()
	o.SetExcluded(f.Exclude)
	srv := &http.Server{Handler: o.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	logf("orchestrator API on %s (services report to %s)", ln.Addr(), cfg.API)
	if !f.Train {
		<-ctx.Done()
		if st, ok := o.Current(); ok && st.State != "done" && st.State != "failed" {
			_, _ = o.Wait(context.Background())
		}
		return nil
	}
	if _, err := o.Submit(ctx, f.Job); err != nil {
		return err
	}
	st, err := o.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("job %s: %s (round %d, accuracy %s, cost spent %.0f, %d reconfigurations)\n", st.State, st.Reason, st.Round,
		fmtAcc(st.Accuracy), st.Spent, len(st.Reconfigurations))
	if st.State == "failed" {
		return errors.New("job failed: " + st.Reason)
	}
	return nil
}

func fmtAcc(a *float64) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *a)
}
