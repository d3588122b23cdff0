package iotcmd

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/iot"
)

func init() { cli.RegisterSystem("iot", newIoTCmd) }

// Flags are `continuum iot`'s flags: the emulator's Config. The iot kind renders its command
// line from the same struct (cli.Args), so each flag's name and default is written once, in Bind
// and DefaultFlags.
type Flags struct {
	iot.Config
}

// DefaultFlags are the defaults of `continuum iot`'s flags: seeds/001's scenario A (one gateway,
// 1000 devices at 4 messages/s, batches of 4000) for a minute.
func DefaultFlags() Flags {
	return Flags{iot.Config{Gateways: 1, Devices: 1000, Rate: 4, Batch: 4000, Timeout: iot.DefaultTimeout,
		Duration: time.Minute, Seed: 1}}
}

// Bind declares the flags on fs, bound to f's fields, with f's values as their defaults.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	cfg := &f.Config
	fs.StringVar(&cfg.Target, "target", cfg.Target, "URL the batches are POSTed to")
	fs.IntVar(&cfg.Gateways, "gateways", cfg.Gateways, "gateways (g)")
	fs.IntVar(&cfg.Devices, "devices", cfg.Devices, "devices in total (d), spread evenly over the gateways")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "messages per second per device (r_m)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "messages per batch (b_s)")
	fs.Float64Var(&cfg.Invalid, "invalid", cfg.Invalid, "share of messages made invalid (out of their type's range)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a batch may take from when it was due")
	fs.IntVar(&cfg.MaxInflight, "max-inflight", cfg.MaxInflight, "batches one gateway may have outstanding (0: 1000)")
	fs.StringVar(&cfg.Broker, "broker", cfg.Broker, "MQTT broker (tcp://host:port) the devices publish to and the adaptors subscribe to; empty: the adaptors get the readings directly")
	fs.IntVar(&cfg.QoS, "qos", cfg.QoS, "MQTT quality of service of the readings: 0 or 1 (with --broker)")
	fs.IntVar(&cfg.Connections, "connections", cfg.Connections, "MQTT connections the devices publish over (with --broker; 0: one per device, at most 1000)")
	fs.StringVar(&cfg.Topic, "topic", cfg.Topic, "MQTT topic prefix (with --broker; default "+iot.DefaultTopic+")")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to emulate, warm-up included")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "leading part left out of the statistics")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seeds the readings, so runs are reproducible")
	fs.StringVar(&cfg.OutDir, "out", cfg.OutDir, "results directory")
}

func newIoTCmd() *cobra.Command {
	flags := DefaultFlags()
	cmd := &cobra.Command{
		Use:   "iot",
		Short: "Emulate IoT devices and gateways (the edge IoT analytics paper, docs/seeds.md) POSTing batches of sensor messages to a URL",
		Long: `Emulates --devices software IoT devices spread over --gateways gateways, each device sending
--rate messages per second ({"sensor_id","name","type","unit","value"}, nine realistic sensor types).
Each gateway's adaptor batches --batch messages and POSTs them as one JSON array to --target over
keep-alive HTTP, open loop: a batch is sent when it is due, answered or not.

t_rr (the batch's request-reply time, from when it was due) and t_ex (the function's execution time,
from X-Handler-Seconds) are recorded per batch; timeouts and errors by type. Writes stats.json,
timeseries.csv, percentiles.csv, latency.hlog, errors.csv and iot.json (batches, messages, bytes,
replies that miscount the batch, and this process's own CPU) to --out.

With --broker, the ingress is MQTT instead: every device publishes each reading to the broker
(topic <--topic>/<gateway>/<sensor_id>, QoS --qos) over --connections connections, and each
gateway's adaptor subscribes to its devices' topics, cuts the readings into batches of --batch as
they arrive and POSTs them to --target. t_in (from when a batch was due until its adaptor had all
its readings) is recorded too, and iot.json counts readings published, received, not received by the end and left in
a last batch that never filled.`,
		Example: `  # the IoT analytics paper's scenario A: 1 gateway, 1000 devices, 4 msg/s each, batches of 4000
  continuum iot --target http://127.0.0.1:8080/ --gateways 1 --devices 1000 --rate 4 --batch 4000 --duration 60s --out /tmp/iot
  # scenario B at 25 msg/s: 250 000 messages/s
  continuum iot --target http://10.0.0.2:8080/function/analytics --gateways 10 --devices 10000 --rate 25 --batch 16000 --out /tmp/iot
  # devices publishing to an MQTT broker, adaptors subscribed
  continuum iot --broker tcp://127.0.0.1:1883 --qos 1 --target http://127.0.0.1:8080/ --devices 1000 --rate 4 --batch 4000 --out /tmp/iot`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := flags.Config
			cfg.Progress = cmd.OutOrStdout()
			_, err := iot.Run(cmd.Context(), cfg)
			return err
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}
