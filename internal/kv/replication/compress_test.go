package replication

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"

	"google.golang.org/grpc/encoding"
)

// TestS2Compressor round-trips messages through the registered compressor, reusing pooled
// writers and readers: incompressible values cost little more than their size, repetitive
// ones shrink.
func TestS2Compressor(t *testing.T) {
	c := encoding.GetCompressor(CompressorS2)
	if c == nil {
		t.Fatalf("compressor %q not registered", CompressorS2)
	}
	random := make([]byte, 100<<10)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	repetitive := bytes.Repeat([]byte(`{"rtt_ms": 3.25, "loss": 0.001}`), 3000)
	for i, msg := range [][]byte{random, repetitive, {}, random[:10], repetitive, random} {
		var wire bytes.Buffer
		w, err := c.Compress(&wire)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(msg); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		size := wire.Len()
		r, err := c.Decompress(&wire)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("message %d: %d bytes came back as %d different ones", i, len(msg), len(got))
		}
		switch {
		case len(msg) == len(random) && size > len(msg)+len(msg)/100+64:
			t.Errorf("incompressible %d bytes took %d on the wire", len(msg), size)
		case len(msg) == len(repetitive) && size > len(msg)/5:
			t.Errorf("repetitive %d bytes took %d on the wire", len(msg), size)
		}
	}
}
