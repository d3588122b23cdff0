package kinds

import "testing"

// TestProgressCountsReadings: the iot line counts readings (batches x each instance's batch
// size), batches failed and the worst instance's p99, from the emulator's progress lines.
func TestProgressCountsReadings(t *testing.T) {
	p := newProgress(map[string]*Config{"a": {Batch: 10}, "b": {Batch: 1}})
	p.Line("a", []byte(`{"type":"progress","t_s":2,"sent":20,"ok":20,"errors":0,"throughput_rps":10,"series":{"t_rr":{"sent":20,"ok":20,"throughput_rps":10,"p99_ms":12.5},"t_ex":{"sent":20,"ok":20}}}`))
	p.Line("b", []byte(`{"type":"progress","t_s":2,"sent":5,"ok":4,"errors":1,"throughput_rps":2,"series":{"t_rr":{"sent":5,"ok":4,"errors":1,"throughput_rps":2,"p99_ms":40}}}`))
	if got, want := p.Text(), "102 readings/s  delivered 204 in 25 batches, 1 batch failed (4.0%), p99 40 ms"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
