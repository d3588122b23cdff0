package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/fl/flcmd"
	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

func init() {
	kind.Register(kind.Def[OrchestratorConfig]{
		Name:     "fl-orchestrator",
		System:   "fl",
		Stacks:   []string{"fl"},
		Role:     kind.RoleComponent,
		Summary:  "the federated-learning orchestrator: configures, deploys and reconfigures Flower services on the FL nodes (labels fl/type, comm/<peer>, data/<class>) for the fl-job workloads",
		Defaults: func() *OrchestratorConfig { return &OrchestratorConfig{Port: 7070} },
		Validate: (*OrchestratorConfig).validate,
		Command:  orchestratorCommand,
		Endpoints: func(c *OrchestratorConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "api", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
		Set:     orchestratorSet,
		Metrics: orchestratorMetrics,
	})
}

// OrchestratorConfig is the `config:` of an fl-orchestrator component.
type OrchestratorConfig struct {
	Port int `yaml:"port"` // the HTTP API (default 7070)
	// Topology, if set, is the seed's CSV of FL nodes (then Place or the node of the same name
	// runs each service); otherwise the run's nodes with an fl/type label take part.
	Topology string        `yaml:"topology"`
	Place    string        `yaml:"place"`
	Poll     spec.Duration `yaml:"poll"`      // default 500ms
	BasePort int           `yaml:"base_port"` // default 8080
	// Exclude lists FL nodes kept out of training. A set event changing it makes nodes leave
	// (added) or join (removed), as the seed's simulated orchestrator took node changes from an
	// edited topology file: {action: set, component: orch, config: {exclude: [n9]}}.
	Exclude []string `yaml:"exclude"`
	// GroupClients runs the clients placed on one node in one process (see docs/fl.md).
	GroupClients bool `yaml:"group_clients"`
}

// validate reports every problem at once, each with its key and the `continuum fl orchestrate`
// flag it becomes.
func (c *OrchestratorConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "--listen", c.Port)
	if c.BasePort < 0 || c.BasePort > 60000 {
		errs.Add("base_port", "--base-port", "%d: want 1-60000 (0: 8080)", c.BasePort)
	}
	if c.Poll.Duration < 0 {
		errs.Add("poll", "--poll", "%v: want > 0 (0: 500ms)", c.Poll.Duration)
	}
	if c.Place != "" && c.Topology == "" {
		errs.Add("place", "--place", "place needs topology: with the run's node labels every node runs its own service")
	}
	return errs.Err()
}

func orchestratorCommand(env kind.Env, c *OrchestratorConfig) (kind.Command, error) {
	// Its services are instances of the run's platform, through that platform's client: a
	// platform without one is refused at the check, not when the run starts its services.
	// Where its services run apart from its node (pods of their own), they get what they read
	// in their command lines and report what the run keeps (rounds, models) to the
	// orchestrator's API, whose output directory the run collects (see docs/fl.md).
	if _, err := platform.InstancesFor(env.Platform); err != nil {
		return kind.Command{}, fmt.Errorf("fl-orchestrator %s: it cannot deploy its services there: %w", env.Instance, err)
	}
	f := flcmd.DefaultOrchestrateFlags()
	f.Platform = env.Platform
	f.Listen = "0.0.0.0:" + strconv.Itoa(c.Port)
	f.Advertise = "http://" + net.JoinHostPort(env.Node, strconv.Itoa(c.Port))
	f.Out = env.OutDir
	if c.Topology != "" {
		p, err := filepath.Abs(c.Topology)
		if err != nil {
			return kind.Command{}, err
		}
		f.Topology = p
		if c.Place != "" {
			if _, ok := env.Nodes[c.Place]; !ok {
				return kind.Command{}, fmt.Errorf("place %q: not a node of the topology", c.Place)
			}
			f.Place = c.Place
		}
	}
	if c.Poll.Duration > 0 {
		f.Poll = c.Poll.Duration
	}
	if c.BasePort > 0 {
		f.BasePort = c.BasePort
	}
	f.Exclude, f.Group = c.Exclude, c.GroupClients
	return kind.Command{
		Args:      append([]string{env.Binary, "fl", "orchestrate"}, cli.Args(flcmd.DefaultOrchestrateFlags(), f)...),
		ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port),
	}, nil
}

// orchestratorChange is what a "set" event may change: the excluded nodes.
type orchestratorChange struct {
	Exclude *[]string `yaml:"exclude"`
}

func orchestratorSet(ctx context.Context, env kind.Env, c *OrchestratorConfig, change *yaml.Node) error {
	var ch orchestratorChange
	if err := spec.DecodeAt("", "config", change, &ch); err != nil {
		return fmt.Errorf("fl-orchestrator %s: %w", env.Instance, err)
	}
	if ch.Exclude == nil {
		return fmt.Errorf("fl-orchestrator %s: set changes exclude (the nodes kept out of training)", env.Instance)
	}
	if env.Dial == nil {
		return nil // run --check
	}
	addr, ok := env.Nodes[env.Node]
	if !ok {
		return fmt.Errorf("fl-orchestrator %s: node %q has no address", env.Instance, env.Node)
	}
	ids := *ch.Exclude
	if ids == nil {
		ids = []string{}
	}
	body, _ := json.Marshal(ids)
	u := "http://" + net.JoinHostPort(addr, strconv.Itoa(c.Port)) + "/nodes/excluded"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	tok, err := httpauth.ReadToken(flcmd.TokenFile(env.OutDir))
	if err != nil {
		return fmt.Errorf("fl-orchestrator %s: the API token: %w", env.Instance, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: env.Dial, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fl-orchestrator %s: PUT %s: %w", env.Instance, u, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fl-orchestrator %s: PUT %s: %s: %s", env.Instance, u, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// orchestratorMetrics are each orchestrator's figures for summary.json: the last job's rounds,
// final and best accuracy, communication spent, the global model's accuracy after every round
// (round_NNN_accuracy), the first configuration (kld, cost_per_epoch, epochs, local_rounds) and
// every reconfiguration's times (reconfiguration_N_apply_s, _resume_s) with their maxima.
func orchestratorMetrics(out kind.RunOutput) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	for _, inst := range out.Instances {
		if _, ok := inst.Config.(*OrchestratorConfig); !ok {
			continue
		}
		fl, err := ReadOutput(inst.OutDir)
		if err != nil || len(fl.Configurations) == 0 {
			continue
		}
		first := fl.Configurations[0].Config
		m := map[string]float64{"rounds": float64(len(fl.Rounds)), "configurations": float64(len(fl.Configurations)),
			"kld": first.KLD, "cost_per_epoch": first.CostPerEpoch, "epochs": float64(first.Epochs), "local_rounds": float64(first.LocalRounds)}
		if n := len(fl.Rounds); n > 0 {
			m["final_accuracy"], m["cost_spent"] = fl.Rounds[n-1].Accuracy, fl.Rounds[n-1].CostSpent
		}
		for _, r := range fl.Rounds {
			m["best_accuracy"] = max(m["best_accuracy"], r.Accuracy)
			m[fmt.Sprintf("round_%03d_accuracy", r.Round)] = r.Accuracy
		}
		m["reconfigurations"] = float64(len(fl.Reconfigurations))
		for i, r := range fl.Reconfigurations {
			m[fmt.Sprintf("reconfiguration_%d_apply_s", i+1)] = r.ApplyS
			m[fmt.Sprintf("reconfiguration_%d_resume_s", i+1)] = r.ResumeS
			m["max_apply_s"] = max(m["max_apply_s"], r.ApplyS)
			m["max_resume_s"] = max(m["max_resume_s"], r.ResumeS)
		}
		res[inst.Name] = m
	}
	return res
}
