package kinds

import "testing"

// TestUsersProgress: records sent (ack), delivered and lost (e2e) and the lag (e2e's p99).
func TestUsersProgress(t *testing.T) {
	p := usersProgress(nil)
	p.Line("users", []byte(`{"type":"progress","t_s":5,"sent":400,"ok":390,"errors":2,"throughput_rps":80,"series":{"e2e":{"sent":392,"ok":390,"errors":2,"throughput_rps":78,"p99_ms":35.2},"ack":{"sent":400,"ok":400,"throughput_rps":80}}}`))
	if got, want := p.Text(), "78 records/s  delivered 390 of 400 sent, 2 lost, lag p99 35.2 ms"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
