package copybuf

import "testing"

func TestPoolLendsFullBuffers(t *testing.T) {
	p := &Pool{}
	b := p.Get()
	if len(b) != Size {
		t.Fatalf("buffer of %d bytes, want %d", len(b), Size)
	}
	b[0] = 7
	p.Put(b)
	// A buffer back from the pool (or a new one) is always a whole one.
	if got := p.Get(); len(got) != Size {
		t.Fatalf("second buffer of %d bytes", len(got))
	}
}
