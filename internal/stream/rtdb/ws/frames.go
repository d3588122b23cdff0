package ws

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// send queues one message.
func (c *wsConn) send(v any) { c.sendBytes(encodeMsg(v)) }

// encodeMsg is v's JSON, nil when it cannot be encoded: only a kv value under the prefix that
// is not JSON (written there by something else than this server) can cause that; the message
// is then dropped and logged rather than sent broken.
func encodeMsg(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("websocket message not encodable: a kv value under the prefix is not JSON", "err", err)
		return nil
	}
	return b
}

// sendBytes queues an encoded message (shared, never modified); a client that lets
// wsMaxQueued bytes pile up is disconnected (it reconnects and listens afresh) rather than
// growing the server's memory without bound.
func (c *wsConn) sendBytes(b []byte) {
	if b == nil {
		return
	}
	c.qmu.Lock()
	if c.queued+len(b) > wsMaxQueued {
		c.qmu.Unlock()
		c.log.Warn("websocket client too slow: disconnecting", "queued_bytes", c.queued)
		c.close()
		return
	}
	c.queue = append(c.queue, b)
	c.queued += len(b)
	c.qmu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *wsConn) close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		// Unblocks the reading goroutine; the writer ends on closing.
		c.c.SetReadDeadline(time.Unix(1, 0))
	})
}

func (c *wsConn) writeLoop() {
	for {
		select {
		case <-c.closing:
			c.flush() // the last messages (a shutdown reason) still go out, best effort
			return
		case <-c.notify:
		case <-c.hubWake:
			c.fwdMu.Lock()
			c.takeAllLocked()
			c.fwdMu.Unlock()
		}
		if err := c.flush(); err != nil {
			c.close()
			return
		}
	}
}

func (c *wsConn) flush() error {
	c.qmu.Lock()
	msgs := c.queue
	c.queue, c.queued = nil, 0
	c.qmu.Unlock()
	for _, m := range msgs {
		c.c.SetWriteDeadline(time.Now().Add(c.s.cfg.RequestTimeout))
		if err := c.writeMessage(m); err != nil {
			return err
		}
	}
	return nil
}

// writeMessage sends m in one frame, or as its frame count and parts of at most wsMaxFrame
// bytes, each cut at a UTF-8 character boundary (every text frame must be valid UTF-8).
func (c *wsConn) writeMessage(m []byte) error {
	if len(m) <= wsMaxFrame {
		return c.c.WriteMessage(websocket.TextMessage, m)
	}
	var parts [][]byte
	for len(m) > 0 {
		n := min(wsMaxFrame, len(m))
		for n < len(m) && n > 0 && !utf8.RuneStart(m[n]) {
			n--
		}
		parts = append(parts, m[:n])
		m = m[n:]
	}
	if err := c.c.WriteMessage(websocket.TextMessage, []byte(strconv.Itoa(len(parts)))); err != nil {
		return err
	}
	for _, p := range parts {
		if err := c.c.WriteMessage(websocket.TextMessage, p); err != nil {
			return err
		}
	}
	return nil
}
