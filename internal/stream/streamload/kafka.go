package streamload

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaSub consumes the topic from its start (the topic is the run's: everything in it was
// sent by this run) without a consumer group: one client fetching every partition, the
// record key being the record's id. It is ready once the topic has partitions, so records the
// users send afterwards cannot be missed.
type kafkaSub struct {
	brokers []string
	topic   string
	log     *slog.Logger
	recon   atomic.Int64
}

func (k *kafkaSub) reconnects() int64 { return k.recon.Load() }

func (k *kafkaSub) resyncCount() int64 { return 0 }

func (k *kafkaSub) run(ctx context.Context, ready chan<- struct{}, deliver func(string, []byte, bool)) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...), kgo.ConsumeTopics(k.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Latency path: answer a fetch as soon as one byte is there, and do not hold an
		// empty fetch longer than 100 ms.
		kgo.FetchMinBytes(1), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		k.log.Error("kafka client", "err", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for ctx.Err() == nil {
		td, err := adm.ListTopics(ctx, k.topic)
		if err == nil && td.Has(k.topic) && td[k.topic].Err == nil && len(td[k.topic].Partitions) > 0 {
			break
		}
		k.log.Info("waiting for the topic", "topic", k.topic, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	close(ready)
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			k.recon.Add(1)
			k.log.Warn("fetch", "topic", t, "partition", p, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			deliver(string(r.Key), r.Value, false)
		})
	}
}
