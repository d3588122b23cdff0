package mvcc

import (
	"context"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// BenchmarkApplyRemote: the receiving side of replication, per change, for batches of the sizes
// a push stream delivers (one change when writes trickle, more when they burst).
func BenchmarkApplyRemote(b *testing.B) {
	for _, batch := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			src := openTest(b, func(c *Config) { c.Replicated = true })
			dst := openTest(b, func(c *Config) { c.Replicated = true })
			ctx := context.Background()
			var changes []Change
			for i := 0; i < b.N; i++ {
				if _, err := src.Put(ctx, &pb.PutRequest{Key: []byte(fmt.Sprintf("key%06d", i%1000)), Value: make([]byte, 32)}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := src.ReadLog(1, 0, func(c *Change) bool { changes = append(changes, *c); return true }); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < len(changes); i += batch {
				if _, err := dst.ApplyRemoteBatch(ctx, changes[i:min(i+batch, len(changes))]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
