package replication

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descConnected = prometheus.NewDesc("continuum_kv_replication_peer_connected",
		"1 while this member's Sync stream from the peer is open.", []string{"peer"}, nil)
	descBehind = prometheus.NewDesc("continuum_kv_replication_peer_behind_changes",
		"Changes the peer held at its last batch that this member has not applied yet.", []string{"peer"}, nil)
	descLastContact = prometheus.NewDesc("continuum_kv_replication_peer_last_contact_seconds",
		"Seconds since the last batch from the peer (-1: never).", []string{"peer"}, nil)
	descApplied = prometheus.NewDesc("continuum_kv_replication_peer_applied_changes_total",
		"Changes this member took from the peer that were new to it.", []string{"peer"}, nil)
	descBatches = prometheus.NewDesc("continuum_kv_replication_peer_batches_total",
		"Messages with changes received from the peer (changes received per message shows its batching).", []string{"peer"}, nil)
	descReceived = prometheus.NewDesc("continuum_kv_replication_peer_received_changes_total",
		"Changes received from the peer, duplicates included.", []string{"peer"}, nil)
	descClockAhead = prometheus.NewDesc("continuum_kv_replication_peer_clock_ahead_seconds",
		"How far the peer's clock ran ahead of this member's at its last batch (send time minus arrival; negative: behind).", []string{"peer"}, nil)
	descOffsetExceeded = prometheus.NewDesc("continuum_kv_replication_peer_clock_offset_exceeded_total",
		"Batches from the peer stamped further ahead of this member's clock than --max-clock-offset (an alarm: they are applied).", []string{"peer"}, nil)
	descLag = prometheus.NewDesc("continuum_kv_replication_peer_lag_seconds",
		"Age of the newest change from the peer when it was applied here (HLC wall time; includes clock skew).", []string{"peer"}, nil)
)

// Collector exports the replicator's per-peer state; register it with the server's registry.
func (r *Replicator) Collector() prometheus.Collector { return collector{r} }

type collector struct{ r *Replicator }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnected, descBehind, descLastContact, descApplied, descBatches, descReceived, descLag, descClockAhead, descOffsetExceeded} {
		ch <- d
	}
	c.r.applyDelay.Describe(ch)
	c.r.catchUp.Describe(ch)
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.r.Peers() {
		name := p.Member.Name
		if name == "" {
			name = p.URL
		}
		connected := 0.0
		if p.Connected {
			connected = 1
		}
		since := -1.0
		if !p.LastContact.IsZero() {
			since = time.Since(p.LastContact).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, connected, name)
		ch <- prometheus.MustNewConstMetric(descBehind, prometheus.GaugeValue, float64(p.Behind), name)
		ch <- prometheus.MustNewConstMetric(descLastContact, prometheus.GaugeValue, since, name)
		ch <- prometheus.MustNewConstMetric(descApplied, prometheus.CounterValue, float64(p.Applied), name)
		ch <- prometheus.MustNewConstMetric(descBatches, prometheus.CounterValue, float64(p.Batches), name)
		ch <- prometheus.MustNewConstMetric(descReceived, prometheus.CounterValue, float64(p.Received), name)
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, p.Lag.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(descClockAhead, prometheus.GaugeValue, p.ClockAhead.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(descOffsetExceeded, prometheus.CounterValue, float64(p.OffsetExceeded), name)
	}
	c.r.applyDelay.Collect(ch)
	c.r.catchUp.Collect(ch)
}
