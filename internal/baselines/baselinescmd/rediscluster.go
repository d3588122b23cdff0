package baselinescmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/cli"
)

func init() { cli.RegisterSystem("baselines", newRedisClusterCmd) }

// CreateFlags are `continuum redis-cluster create`'s flags; the redis-cluster kind renders its
// command line from the same struct.
type CreateFlags struct {
	Config baselines.RedisJoinConfig
}

// DefaultCreateFlags are the defaults of `continuum redis-cluster create`.
func DefaultCreateFlags() CreateFlags {
	return CreateFlags{Config: baselines.RedisJoinConfig{Replicas: 1, Listen: ":16999", Timeout: baselines.DefaultReadyTimeout}}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *CreateFlags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringArrayVar(&cfg.Addrs, "member", cfg.Addrs, "a member's HOST:PORT (repeatable, in order: masters first)")
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "replicas per master")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "where to serve GET /roles once the cluster is whole")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "how long to wait for the members and the cluster")
}

func newRedisClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "redis-cluster",
		// A helper its kind runs: it works, help does not list it.
		Hidden: true,
		Short:  "Form a Redis Cluster from running cluster-mode redis-server instances",
		Example: `  continuum redis-cluster create --member n1:6379 --member n2:6379 --member n3:6379 \
    --member n1:6380 --member n2:6380 --member n3:6380 --replicas 1`,
	}
	flags := DefaultCreateFlags()
	create := &cobra.Command{
		Use:   "create",
		Short: "Join the members into one cluster, wait until it is whole, then serve their roles until stopped",
		Long: `Waits until every --member answers, runs redis-cli --cluster create (unless they already form a
cluster), waits until every slot is served and every replica's link is up, then serves GET /roles
(every member's role as JSON) on --listen until it is stopped. The first third of the members
(with one replica per master) become masters.`,
		Example: `  continuum redis-cluster create --member n1:6379 --member n2:6379 --member n3:6379 \
    --member n1:6380 --member n2:6380 --member n3:6380 --replicas 1 --listen :16999`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return baselines.RunRedisClusterJoiner(cmd.Context(), flags.Config)
		},
	}
	flags.Bind(create.Flags())
	_ = create.MarkFlagRequired("member")
	cmd.AddCommand(create)
	return cmd
}
