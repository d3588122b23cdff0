package shareddata

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
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
// reads them all, in one Cluster slot. A cursor of a multi-channel subscription holds a
// position per channel ("<channel>=<id>.<number>,..."); a plain stream position applies to
// every channel (exact only for one channel: stream IDs are per stream).
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
func entryNum(m redis.XMessage) int64 { return intField(m, "s") }

func intField(m redis.XMessage, f string) int64 {
	s, _ := m.Values[f].(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// streamPos is a subscription's position in one stream: the last entry delivered (or skipped)
// and its publication number.
type streamPos struct {
	id  string
	num int64
}

// multiCursor is the cursor of a multi-channel subscription: every channel's position.
func multiCursor(channels []string, pos []streamPos) Cursor {
	var b strings.Builder
	for i, c := range channels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c)
		b.WriteByte('=')
		b.WriteString(string(redisCursor(pos[i].id, pos[i].num)))
	}
	return Cursor(b.String())
}

// startPositions turns cursor from into a position per stream.
func startPositions(from Cursor, channels []string) ([]streamPos, error) {
	pos := make([]streamPos, len(channels))
	if !strings.Contains(string(from), "=") {
		id, num, err := parseRedisCursor(from)
		if err != nil {
			return nil, err
		}
		if len(channels) > 1 {
			num = 0 // the number counts one channel's publications, not the others'
		}
		for i := range pos {
			pos[i] = streamPos{id, num}
		}
		return pos, nil
	}
	byChannel := map[string]streamPos{}
	for _, part := range strings.Split(string(from), ",") {
		c, p, ok := strings.Cut(part, "=")
		id, num, err := parseRedisCursor(Cursor(p))
		if !ok || ValidName("channel", c) != nil || err != nil {
			return nil, fmt.Errorf("cursor %q: not a Redis subscription position (<channel>=<ms>-<seq>.<number>,...)", from)
		}
		byChannel[c] = streamPos{id, num}
	}
	for i, c := range channels {
		p, ok := byChannel[c]
		if !ok {
			return nil, fmt.Errorf("cursor %q has no position for channel %q: it comes from a subscription to other channels", from, c)
		}
		pos[i] = p
	}
	return pos, nil
}

// stream delivers the entries of streams after from. channels[i] is the Message.Channel of
// streams[i] (empty for metrics and control).
//
// Every XREAD asks for the entries after the last one delivered from each stream, so a
// reconnect (or a Cluster failover, which go-redis follows through MOVED) resumes without
// skipping. Publication numbers must follow each other: a jump means trimming (MAXLEN)
// dropped entries before they were read, and is delivered as a Gap before the next entry.
//
// With several streams, one XREAD returns each stream's entries in turn, so a stream's newer
// entry would come before another's older one: the entries are delivered in publication order
// (p, i) instead, and only up to the last publication every stream's batch holds in full (a
// stream whose batch reached readBatch may have more entries of a later publication).
func (s *redisStore) stream(ctx context.Context, streams, channels []string, from Cursor) (*Subscription, error) {
	var pos []streamPos
	if from == "" {
		// "From now" is pinned to each stream's last entry, so a reconnect before the first
		// message still resumes where the subscription began.
		pos = make([]streamPos, len(streams))
		for i, st := range streams {
			last, err := s.rdb.XRevRangeN(ctx, st, "+", "-", 1).Result()
			if err != nil {
				return nil, err
			}
			pos[i] = streamPos{"0-0", 0}
			if len(last) > 0 {
				pos[i] = streamPos{last[0].ID, entryNum(last[0])}
			}
		}
	} else {
		var err error
		if pos, err = startPositions(from, channels); err != nil {
			return nil, err
		}
	}
	cursor := func(i int) Cursor {
		if len(streams) == 1 {
			return redisCursor(pos[i].id, pos[i].num)
		}
		return multiCursor(channels, pos)
	}
	type entry struct {
		stream int
		m      redis.XMessage
		p, i   int64
	}
	return subscribe(ctx, func(ctx context.Context, sub *Subscription, send func(Message) bool) error {
		b := reconnectBackoff()
		for {
			args := append([]string(nil), streams...)
			for _, p := range pos {
				args = append(args, p.id)
			}
			res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: args, Count: readBatch, Block: readBlock}).Result()
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
				if !b.Wait(ctx) {
					return nil
				}
				continue
			}
			b.Reset()
			var entries []entry
			bound := int64(math.MaxInt64)
			for _, st := range res {
				i := indexOf(streams, st.Stream)
				if i < 0 {
					continue
				}
				for _, m := range st.Messages {
					entries = append(entries, entry{i, m, intField(m, "p"), intField(m, "i")})
				}
				if n := len(st.Messages); n >= readBatch && len(streams) > 1 {
					bound = min(bound, intField(st.Messages[n-1], "p"))
				}
			}
			if len(streams) > 1 {
				// Entries of one stream are in order already; a stable sort keeps
				// entries without a publication number (p 0) in stream order.
				slices.SortStableFunc(entries, func(a, b entry) int {
					return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.i, b.i))
				})
			}
			for _, e := range entries {
				if e.p > bound {
					break // read again: a full batch may hide earlier entries of this publication
				}
				i, m := e.stream, e.m
				num := entryNum(m)
				if pos[i].num > 0 && num > pos[i].num+1 {
					if !send(Message{Channel: channels[i], Gap: true, Cursor: cursor(i)}) {
						return nil
					}
				}
				pos[i] = streamPos{m.ID, num}
				name, _ := m.Values["n"].(string)
				value, _ := m.Values["v"].(string)
				msg := Message{Channel: channels[i], Name: name, Value: []byte(value), Cursor: cursor(i)}
				if channels[i] != "" {
					msg.Name = ""
				}
				if !send(msg) {
					return nil
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
