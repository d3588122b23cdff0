package shareddata

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stream reading: XREAD blocks this long per call, so Close ends a subscription within about
// that much; a batch is at most readBatch entries.
const (
	readBlock = 500 * time.Millisecond
	readBatch = 128
)

func (s *redisStore) SubscribeMetrics(ctx context.Context, group string, from Cursor) (*Subscription, error) {
	if err := validNames("group", group); err != nil {
		return nil, err
	}
	return s.stream(ctx, []string{redisMetricsStream(group)}, []string{""}, from)
}

func (s *redisStore) SubscribeControl(ctx context.Context, group, producer string, from Cursor) (*Subscription, error) {
	if err := checkNames("group", group, "producer", producer); err != nil {
		return nil, err
	}
	return s.stream(ctx, []string{redisCtrlStream(group, producer)}, []string{""}, from)
}

// Subscribe reads one stream per channel; they share the namespace's hash tag, so one XREAD
// reads them all, in one Cluster slot. from applies to every channel; the subscription keeps
// a cursor per channel from then on.
func (s *redisStore) Subscribe(ctx context.Context, ns string, from Cursor, channels ...string) (*Subscription, error) {
	if err := validSubscription(ns, channels); err != nil {
		return nil, err
	}
	streams := make([]string, len(channels))
	for i, c := range channels {
		streams[i] = redisSDLEvents(ns, c)
	}
	return s.stream(ctx, streams, channels, from)
}

// A Redis cursor is the entry's stream ID and, after a dot, its publication number:
// "<ms>-<seq>.<s>". A plain stream ID is accepted too (the number is then unknown, and a gap
// right at the resume point cannot be seen).
func redisCursor(id string, num int64) Cursor {
	if num <= 0 {
		return Cursor(id)
	}
	return Cursor(id + "." + strconv.FormatInt(num, 10))
}

func parseRedisCursor(c Cursor) (id string, num int64, err error) {
	id, n, hasNum := strings.Cut(string(c), ".")
	a, b, ok := strings.Cut(id, "-")
	_, err1 := strconv.ParseUint(a, 10, 64)
	_, err2 := strconv.ParseUint(b, 10, 64)
	if hasNum {
		num, err = strconv.ParseInt(n, 10, 64)
	}
	if !ok || err1 != nil || err2 != nil || err != nil || num < 0 {
		return "", 0, fmt.Errorf("cursor %q: not a Redis stream position (<ms>-<seq>.<number>)", c)
	}
	return id, num, nil
}

// entryNum is an entry's publication number (0 when it has none).
func entryNum(m redis.XMessage) int64 {
	s, _ := m.Values["s"].(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// stream delivers the entries of streams after from. channels[i] is the Message.Channel of
// streams[i] (empty for metrics and control).
//
// Every XREAD asks for the entries after the last one delivered from each stream, so a
// reconnect (or a Cluster failover, which go-redis follows through MOVED) resumes without
// skipping. Publication numbers must follow each other: a jump means trimming (MAXLEN)
// dropped entries before they were read, and is delivered as a Gap before the next entry.
func (s *redisStore) stream(ctx context.Context, streams, channels []string, from Cursor) (*Subscription, error) {
	ids := make([]string, len(streams))
	nums := make([]int64, len(streams))
	if from == "" {
		// "From now" is pinned to each stream's last entry, so a reconnect before the first
		// message still resumes where the subscription began.
		for i, st := range streams {
			last, err := s.rdb.XRevRangeN(ctx, st, "+", "-", 1).Result()
			if err != nil {
				return nil, err
			}
			ids[i] = "0-0"
			if len(last) > 0 {
				ids[i], nums[i] = last[0].ID, entryNum(last[0])
			}
		}
	} else {
		id, num, err := parseRedisCursor(from)
		if err != nil {
			return nil, err
		}
		if len(streams) > 1 {
			num = 0 // the number counts one channel's publications, not the others'
		}
		for i := range ids {
			ids[i], nums[i] = id, num
		}
	}
	return subscribe(ctx, func(ctx context.Context, sub *Subscription, send func(Message) bool) error {
		var b backoff
		for {
			res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: append(append([]string(nil), streams...), ids...),
				Count: readBatch, Block: readBlock}).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, redis.ErrClosed) {
					return errClosed
				}
				sub.reconnected()
				if !b.wait(ctx) {
					return nil
				}
				continue
			}
			b.reset()
			for _, st := range res {
				i := indexOf(streams, st.Stream)
				if i < 0 {
					continue
				}
				for _, m := range st.Messages {
					num := entryNum(m)
					if nums[i] > 0 && num > nums[i]+1 {
						if !send(Message{Channel: channels[i], Gap: true, Cursor: redisCursor(ids[i], nums[i])}) {
							return nil
						}
					}
					ids[i], nums[i] = m.ID, num
					name, _ := m.Values["n"].(string)
					value, _ := m.Values["v"].(string)
					msg := Message{Channel: channels[i], Name: name, Value: []byte(value), Cursor: redisCursor(m.ID, num)}
					if channels[i] != "" {
						msg.Name = ""
					}
					if !send(msg) {
						return nil
					}
				}
			}
		}
	}), nil
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
