package baselinescmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/cli"
)

func init() { cli.RegisterSystem("baselines", newKafkaTopicsCmd) }

func newKafkaTopicsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "kafka-topics",
		// A helper its kind runs: it works, help does not list it.
		Hidden:  true,
		Short:   "Create Kafka topics once the brokers answer (the kafka kind runs it next to its broker)",
		Example: `  continuum kafka-topics create --bootstrap 127.0.0.1:9092 --topic events:3:1`,
	}
	var (
		bootstrap []string
		topics    []string
		brokers   int
		timeout   time.Duration
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Wait until --brokers brokers answer at --bootstrap, then create every --topic and wait for its leaders",
		Long: `Waits (up to --timeout) until a metadata request to --bootstrap lists --brokers brokers and an
active controller, creates each --topic (name:partitions:replication; an existing topic is kept)
and waits until every partition has a leader.`,
		Example: `  continuum kafka-topics create --bootstrap 127.0.0.1:9092 --topic events:3:1 --topic audit:1:1`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts := make([]baselines.KafkaTopic, 0, len(topics))
			for _, s := range topics {
				t, err := baselines.ParseKafkaTopic(s)
				if err != nil {
					return err
				}
				ts = append(ts, t)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			// A broker takes seconds to start, so this waits; but it says within seconds what
			// it is waiting for, and why, rather than only at the end of --timeout.
			start, told := time.Now(), time.Duration(0)
			for {
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				err := baselines.KafkaReady(rctx, bootstrap, brokers)
				rcancel()
				if err == nil {
					break
				}
				if waited := time.Since(start); waited-told >= 5*time.Second {
					told = waited
					fmt.Fprintf(cmd.ErrOrStderr(), "kafka-topics: waiting for kafka at %v (%v of --timeout %v): %v\n",
						bootstrap, waited.Round(time.Second), timeout, err)
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("kafka at %v not ready: %w", bootstrap, err)
				case <-time.After(200 * time.Millisecond):
				}
			}
			if err := baselines.CreateKafkaTopics(ctx, bootstrap, ts); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kafka-topics: created %v\n", topics)
			return nil
		},
	}
	create.Flags().StringArrayVar(&bootstrap, "bootstrap", nil, "a broker's HOST:PORT (repeatable)")
	create.Flags().StringArrayVar(&topics, "topic", nil, "a topic as name:partitions:replication (repeatable)")
	create.Flags().IntVar(&brokers, "brokers", 1, "how many brokers must answer before topics are created")
	create.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the brokers and the topics' leaders")
	_ = create.MarkFlagRequired("bootstrap")
	_ = create.MarkFlagRequired("topic")
	cmd.AddCommand(create)
	return cmd
}
