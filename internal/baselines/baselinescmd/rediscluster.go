package baselinescmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/cli"
)

func init() { cli.Register(cli.Top, newRedisClusterCmd) }

func newRedisClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redis-cluster",
		Short: "Form a Redis Cluster from running cluster-mode redis-server instances",
		Example: `  continuum redis-cluster create --member n1:6379 --member n2:6379 --member n3:6379 \
    --member n1:6380 --member n2:6380 --member n3:6380 --replicas 1`,
	}
	var cfg baselines.RedisJoinConfig
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
			return baselines.RunRedisClusterJoiner(cmd.Context(), cfg)
		},
	}
	f := create.Flags()
	f.StringArrayVar(&cfg.Addrs, "member", nil, "a member's HOST:PORT (repeatable, in order: masters first)")
	f.IntVar(&cfg.Replicas, "replicas", 1, "replicas per master")
	f.StringVar(&cfg.Listen, "listen", ":16999", "where to serve GET /roles once the cluster is whole")
	f.DurationVar(&cfg.Timeout, "timeout", baselines.DefaultReadyTimeout, "how long to wait for the members and the cluster")
	_ = create.MarkFlagRequired("member")
	cmd.AddCommand(create)
	return cmd
}
