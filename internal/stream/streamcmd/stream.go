package streamcmd

import (
	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/cli"
)

// Group is the cli registry parent of `continuum stream`'s subcommands.
const Group = "stream"

func init() {
	cli.RegisterSystem("stream", newStreamCmd)
	cli.Register(Group, newRealtimeDBCmd)
	cli.Register(Group, newBridgeCmd)
	cli.Register(Group, newAggregatorCmd)
	cli.Register(Group, newUsersCmd)
	// Their top-level names before they moved under `continuum stream`: hidden, and saying
	// what to type instead, so that scripts and charts written for them keep working.
	cli.Register(cli.Top, cli.Deprecated("realtime-db", "continuum stream realtime-db", newRealtimeDBCmd))
	cli.Register(cli.Top, cli.Deprecated("stream-bridge", "continuum stream bridge", newBridgeCmd))
	cli.Register(cli.Top, cli.Deprecated("stream-aggregator", "continuum stream aggregator", newAggregatorCmd))
	cli.Register(cli.Top, cli.Deprecated("stream-users", "continuum stream users", newUsersCmd))
}

func newStreamCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Edge streaming: the realtime database, the HTTP-to-Kafka bridge, the aggregator and the users emulator",
		Long: `The stream system (after Carpio et al.'s container-based edge system, docs/seeds.md; docs/stream.md):
a Firebase-compatible realtime database on continuum kv, a bridge from HTTP to Kafka, an exactly-once
aggregator from Kafka into the database, and the paper's users and subscriber that time records end
to end.`,
		Example: `  continuum stream realtime-db --listen :9000 --endpoints http://127.0.0.1:2379
  continuum stream bridge --listen :8090 --brokers 127.0.0.1:9092
  continuum stream aggregator --brokers 127.0.0.1:9092 --topics sensors --rtdb http://127.0.0.1:9000`,
	}
	cmd.AddCommand(cli.Commands(Group)...)
	return cmd
}
