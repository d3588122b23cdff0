package replication

import (
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
)

// Compressors a puller can ask its peer's Sync stream to use (Config.Compressor).
//
// S2 (a Snappy extension) is the default, not gzip. A change carries its values whole, every
// message is compressed once per peer stream, and applications store values that do not
// compress: random or already-compressed payloads, like PACE's 100 kB metrics (docs/shareddata.md). gzip spent 2.9 ms of
// CPU on each such 100 kB value on this project's 2-core machines, for every peer: at a few
// hundred writes per second that was most of a core. S2 stores incompressible blocks as they are
// and still shrinks repetitive ones several-fold, at over a GB/s.
const (
	CompressorS2   = "s2"
	CompressorGzip = gzip.Name
)

// Compressors lists the names Config.Compressor accepts besides "" (none).
var Compressors = []string{CompressorS2, CompressorGzip}

func init() { encoding.RegisterCompressor(&s2Compressor{}) }

// s2Compressor implements encoding.Compressor with pooled S2 stream writers and readers. A
// writer runs on the caller's goroutine (WriterConcurrency(1)): gRPC compresses one message at
// a time per stream, and a stream's send path should not spawn goroutines.
type s2Compressor struct{ writers, readers sync.Pool }

func (c *s2Compressor) Name() string { return CompressorS2 }

func (c *s2Compressor) Compress(w io.Writer) (io.WriteCloser, error) {
	z, _ := c.writers.Get().(*s2Writer)
	if z == nil {
		z = &s2Writer{Writer: s2.NewWriter(nil, s2.WriterConcurrency(1)), pool: &c.writers}
	}
	z.Reset(w)
	return z, nil
}

// s2Writer returns itself to the pool when gRPC closes it at the end of a message.
type s2Writer struct {
	*s2.Writer
	pool *sync.Pool
}

func (z *s2Writer) Close() error {
	defer z.pool.Put(z)
	return z.Writer.Close()
}

func (c *s2Compressor) Decompress(r io.Reader) (io.Reader, error) {
	z, _ := c.readers.Get().(*s2Reader)
	if z == nil {
		z = &s2Reader{Reader: s2.NewReader(nil), pool: &c.readers}
	}
	z.Reset(r)
	return z, nil
}

// s2Reader returns itself to the pool once gRPC has read a message to its end.
type s2Reader struct {
	*s2.Reader
	pool *sync.Pool
}

func (z *s2Reader) Read(p []byte) (int, error) {
	n, err := z.Reader.Read(p)
	if err == io.EOF {
		z.pool.Put(z)
	}
	return n, err
}
