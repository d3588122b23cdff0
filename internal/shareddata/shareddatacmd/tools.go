package shareddatacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/shareddata"
)

// The platform's data by hand: `continuum shareddata set/get/keys/rm/publish/subscribe/state`,
// each a thin shell over one shareddata.Store call, so what a user sees is what an application
// gets.

// storeConn is the store a command connects to, set by the flags addStoreFlags adds.
type storeConn struct{ cfg shareddata.Config }

func addStoreFlags(cmd *cobra.Command) *storeConn {
	s := &storeConn{cfg: defaultStore()}
	storeFlags(cmd.Flags(), &s.cfg)
	_ = cmd.MarkFlagRequired("endpoints")
	return s
}

// with opens the store, runs f and closes the store.
func (s *storeConn) with(ctx context.Context, f func(shareddata.Store) error) error {
	st, err := shareddata.Open(ctx, s.cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

// consistency adds --serializable to cmd.
func consistency(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("serializable", false, "read from the nearest copy (etcd: the member asked; Redis Cluster: a replica), which may be stale")
}

func readOption(serializable bool) shareddata.ReadOption {
	if serializable {
		return shareddata.WithConsistency(shareddata.Serializable)
	}
	return shareddata.WithConsistency(shareddata.Linearizable)
}

// parsePairs reads KEY=VALUE arguments (the key is up to the first '=').
func parsePairs(args []string) ([]shareddata.Pair, error) {
	pairs := make([]shareddata.Pair, 0, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE with a non-empty KEY", a)
		}
		pairs = append(pairs, shareddata.Pair{Key: k, Value: []byte(v)})
	}
	return pairs, nil
}

func newSharedDataSetCmd() *cobra.Command {
	var sf *storeConn
	cmd := &cobra.Command{
		Use:     "set NAMESPACE KEY=VALUE...",
		Short:   "Write keys of a namespace, all atomically",
		Example: `  continuum shareddata set --backend etcd --endpoints http://127.0.0.1:2379 app1 mode=fast limit=10`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pairs, err := parsePairs(args[1:])
			if err != nil {
				return err
			}
			return sf.with(cmd.Context(), func(st shareddata.Store) error { return st.Set(cmd.Context(), args[0], pairs...) })
		},
	}
	sf = addStoreFlags(cmd)
	return cmd
}

func newSharedDataGetCmd() *cobra.Command {
	var sf *storeConn
	var serializable *bool
	cmd := &cobra.Command{
		Use:   "get NAMESPACE KEY...",
		Short: "Read keys of a namespace: one KEY<tab>VALUE line per key present, in argument order",
		Long: `Reads the keys in one request and prints a KEY<tab>VALUE line for each key present, in the order
given. Absent keys print nothing; the command fails if none of the keys is present.`,
		Example: `  continuum shareddata get --backend redis-cluster --endpoints n1:6379 app1 mode limit
  continuum shareddata get --backend etcd --endpoints http://n2:2379 --serializable app1 mode`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sf.with(cmd.Context(), func(st shareddata.Store) error {
				got, err := st.Get(cmd.Context(), args[0], args[1:], readOption(*serializable))
				if err != nil {
					return err
				}
				if len(got) == 0 {
					return fmt.Errorf("namespace %s: none of %s is set", args[0], strings.Join(args[1:], ", "))
				}
				for _, k := range args[1:] {
					if v, ok := got[k]; ok {
						fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", k, v)
					}
				}
				return nil
			})
		},
	}
	sf = addStoreFlags(cmd)
	serializable = consistency(cmd)
	return cmd
}

// storeCommand completes cmd: it adds the store flags, and its RunE opens the store and runs run.
func storeCommand(cmd *cobra.Command, run func(cmd *cobra.Command, st shareddata.Store, args []string) error) *cobra.Command {
	sf := addStoreFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return sf.with(cmd.Context(), func(st shareddata.Store) error { return run(cmd, st, args) })
	}
	return cmd
}

func newSharedDataKeysCmd() *cobra.Command {
	return storeCommand(&cobra.Command{
		Use:     "keys NAMESPACE [PREFIX]",
		Short:   "List a namespace's keys (those starting with PREFIX), sorted, one per line",
		Example: `  continuum shareddata keys --backend kv --endpoints http://127.0.0.1:2379 app1`,
		Args:    cobra.RangeArgs(1, 2),
	}, func(cmd *cobra.Command, st shareddata.Store, args []string) error {
		prefix := ""
		if len(args) == 2 {
			prefix = args[1]
		}
		keys, err := st.ListKeys(cmd.Context(), args[0], prefix)
		for _, k := range keys {
			fmt.Fprintln(cmd.OutOrStdout(), k)
		}
		return err
	})
}

func newSharedDataRmCmd() *cobra.Command {
	return storeCommand(&cobra.Command{
		Use:     "rm NAMESPACE KEY...",
		Short:   "Delete keys of a namespace (absent keys are not an error)",
		Example: `  continuum shareddata rm --backend redis --endpoints 127.0.0.1:6379 app1 mode`,
		Args:    cobra.MinimumNArgs(2),
	}, func(cmd *cobra.Command, st shareddata.Store, args []string) error {
		return st.Remove(cmd.Context(), args[0], args[1:]...)
	})
}

func newSharedDataPublishCmd() *cobra.Command {
	var sf *storeConn
	var metrics, control, producer, consumer string
	cmd := &cobra.Command{
		Use:   "publish {NAMESPACE CHANNEL DATA [KEY=VALUE...] | --metrics GROUP --producer P DATA | --control GROUP --producer P --consumer C DATA}",
		Short: "Publish DATA on a channel (writing the KEY=VALUE pairs in the same atomic step), or as a producer's metrics or a consumer's control",
		Example: `  continuum shareddata publish --backend etcd --endpoints http://127.0.0.1:2379 app1 config changed mode=slow
  continuum shareddata publish --backend redis --endpoints 127.0.0.1:6379 --metrics g1 --producer p1 '{"rtt_ms": 3}'
  continuum shareddata publish --backend kv --endpoints http://n1:2379 --control g1 --producer p1 --consumer c1 '{"rate": 10}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if metrics != "" || control != "" {
				switch {
				case metrics != "" && control != "":
					return fmt.Errorf("give --metrics or --control, not both")
				case len(args) != 1:
					return fmt.Errorf("--metrics/--control: want exactly one argument, DATA; got %d", len(args))
				case producer == "":
					return fmt.Errorf("--metrics/--control: --producer is required")
				case control != "" && consumer == "":
					return fmt.Errorf("--control: --consumer (who publishes the control) is required")
				}
				return sf.with(ctx, func(st shareddata.Store) error {
					if metrics != "" {
						return st.PublishMetrics(ctx, metrics, producer, []byte(args[0]))
					}
					return st.PublishControl(ctx, control, producer, consumer, []byte(args[0]))
				})
			}
			if len(args) < 3 {
				return fmt.Errorf("want NAMESPACE CHANNEL DATA [KEY=VALUE...], or --metrics/--control; got %d arguments", len(args))
			}
			pairs, err := parsePairs(args[3:])
			if err != nil {
				return err
			}
			ev := []shareddata.Event{{Channel: args[1], Data: []byte(args[2])}}
			return sf.with(ctx, func(st shareddata.Store) error { return st.SetAndPublish(ctx, args[0], ev, pairs...) })
		},
	}
	sf = addStoreFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&metrics, "metrics", "", "publish DATA as --producer's metrics for this group")
	f.StringVar(&control, "control", "", "publish DATA as --consumer's control for --producer in this group")
	f.StringVar(&producer, "producer", "", "the producer (with --metrics or --control)")
	f.StringVar(&consumer, "consumer", "", "the consumer publishing control (with --control)")
	return cmd
}

// messageLine is how subscribe prints a message: one JSON object per line.
type messageLine struct {
	Channel string `json:"channel,omitempty"`
	Name    string `json:"name,omitempty"`
	Value   string `json:"value"`
	Cursor  string `json:"cursor"`
	Gap     bool   `json:"gap,omitempty"`
}

func newSharedDataSubscribeCmd() *cobra.Command {
	var sf *storeConn
	var from, metrics, control, producer string
	var count int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "subscribe [NAMESPACE CHANNEL...]",
		Short: "Print the messages published on channels (or a group's metrics or control) as JSON lines",
		Long: `Subscribes to the channels of NAMESPACE, or with --metrics GROUP to the metrics of a group's producers,
or with --control GROUP --producer P to the control published for P, and prints one JSON object per
message: {"channel", "name" (the producer or consumer that published it), "value", "cursor"}, or
{"gap": true, "cursor"} where the store no longer held some publications. A later --from CURSOR
resumes after that message. Without --from, only messages published from now on are printed.
The command ends after --count messages (0: never) or --timeout without a message (0: never).`,
		Example: `  continuum shareddata subscribe --backend etcd --endpoints http://127.0.0.1:2379 app1 config heartbeat
  continuum shareddata subscribe --backend redis-cluster --endpoints n1:6379 --metrics g1 --count 10
  continuum shareddata subscribe --backend kv --endpoints http://n3:2379 --control g1 --producer p1 --from 1234`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return sf.with(ctx, func(st shareddata.Store) error {
				var sub *shareddata.Subscription
				var err error
				switch {
				case metrics != "" && (control != "" || len(args) > 0):
					return fmt.Errorf("--metrics: give no --control, namespace or channels with it")
				case metrics != "":
					sub, err = st.SubscribeMetrics(ctx, metrics, shareddata.Cursor(from))
				case control != "" && len(args) > 0:
					return fmt.Errorf("--control: give no namespace or channels with it")
				case control != "":
					if producer == "" {
						return fmt.Errorf("--control %s: --producer names whose control to follow", control)
					}
					sub, err = st.SubscribeControl(ctx, control, producer, shareddata.Cursor(from))
				case len(args) < 2:
					return fmt.Errorf("want NAMESPACE and at least one CHANNEL, or --metrics GROUP, or --control GROUP --producer P")
				default:
					sub, err = st.Subscribe(ctx, args[0], shareddata.Cursor(from), args[1:]...)
				}
				if err != nil {
					return err
				}
				defer sub.Close()
				return printMessages(cmd.OutOrStdout(), sub, count, wait)
			})
		},
	}
	sf = addStoreFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "resume after this cursor (a message's \"cursor\")")
	f.StringVar(&metrics, "metrics", "", "subscribe to this group's metrics")
	f.StringVar(&control, "control", "", "subscribe to this group's control (with --producer)")
	f.StringVar(&producer, "producer", "", "the producer whose control --control follows")
	f.IntVar(&count, "count", 0, "end after this many messages (0: never)")
	f.DurationVar(&wait, "timeout", 0, "end after this long without a message (0: never)")
	return cmd
}

// printMessages prints sub's messages until count were printed, wait passed without one, or
// the subscription ended.
func printMessages(w io.Writer, sub *shareddata.Subscription, count int, wait time.Duration) error {
	enc := json.NewEncoder(w)
	var idle <-chan time.Time
	for n := 0; count == 0 || n < count; n++ {
		if wait > 0 {
			idle = time.After(wait)
		}
		select {
		case m, ok := <-sub.C:
			if !ok {
				return sub.Err()
			}
			if err := enc.Encode(messageLine{Channel: m.Channel, Name: m.Name, Value: string(m.Value), Cursor: string(m.Cursor), Gap: m.Gap}); err != nil {
				return err
			}
		case <-idle:
			return nil
		}
	}
	return nil
}

func newSharedDataStateCmd() *cobra.Command {
	var sf *storeConn
	var serializable *bool
	var push string
	var capacity int
	cmd := &cobra.Command{
		Use:   "state CONSUMER",
		Short: "Print a consumer's state queue (oldest first, one entry per line), or push an entry with --push",
		Long: `Prints the consumer's state queue: a "head H tail T" line (the queue holds H-T entries), then each
entry, oldest first. With --push VALUE, first appends VALUE and drops the oldest entries beyond
--capacity, in one atomic step, and prints the queue that step returned.`,
		Example: `  continuum shareddata state --backend etcd --endpoints http://127.0.0.1:2379 c1
  continuum shareddata state --backend redis --endpoints 127.0.0.1:6379 --push '{"rtt_ms": 3}' --capacity 1000 c1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, consumer := cmd.Context(), args[0]
			return sf.with(ctx, func(st shareddata.Store) error {
				var queue [][]byte
				var err error
				if cmd.Flags().Changed("push") {
					queue, err = st.StatePush(ctx, consumer, capacity, []byte(push))
				} else {
					queue, err = st.StateRead(ctx, consumer, readOption(*serializable))
				}
				if err != nil {
					return err
				}
				head, tail, err := st.StateIndices(ctx, consumer, readOption(*serializable))
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "head %d tail %d\n", head, tail)
				for _, e := range queue {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\n", e)
				}
				return nil
			})
		},
	}
	sf = addStoreFlags(cmd)
	serializable = consistency(cmd)
	cmd.Flags().StringVar(&push, "push", "", "append this entry first")
	cmd.Flags().IntVar(&capacity, "capacity", 1000, fmt.Sprintf("with --push: the queue's capacity in entries (1 to %d)", shareddata.MaxStateCapacity))
	return cmd
}

// sharedDataToolCmds are the data commands of `continuum shareddata`.
func sharedDataToolCmds() []*cobra.Command {
	return []*cobra.Command{newSharedDataSetCmd(), newSharedDataGetCmd(), newSharedDataKeysCmd(), newSharedDataRmCmd(),
		newSharedDataPublishCmd(), newSharedDataSubscribeCmd(), newSharedDataStateCmd()}
}
