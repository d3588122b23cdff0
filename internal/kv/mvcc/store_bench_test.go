package mvcc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// BenchmarkPutParallel measures concurrent durable puts (group commit) without the network.
func BenchmarkPutParallel(b *testing.B) {
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprint("clients=", conc), func(b *testing.B) {
			s := openTest(b, nil)
			var n atomic.Int64
			val := make([]byte, 256)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := 0; c < conc; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := s.Put(context.Background(), &pb.PutRequest{Key: fmt.Appendf(nil, "key%d", i%10000), Value: val}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "puts/s")
		})
	}
}

// BenchmarkRange measures single-key reads.
func BenchmarkRange(b *testing.B) {
	s := openTest(b, nil)
	for i := range 10000 {
		if _, err := s.Put(context.Background(), &pb.PutRequest{Key: fmt.Appendf(nil, "key%d", i), Value: make([]byte, 256)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Range(&pb.RangeRequest{Key: fmt.Appendf(nil, "key%d", i%10000)}); err != nil {
			b.Fatal(err)
		}
	}
}
