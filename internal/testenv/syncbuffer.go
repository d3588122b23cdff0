package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a server, a command or a log handler may write while the
// test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns the non-empty lines written so far that contain every one of sub.
func (s *SyncBuffer) Lines(sub ...string) []string {
	var out []string
next:
	for _, l := range strings.Split(s.String(), "\n") {
		if l == "" {
			continue
		}
		for _, w := range sub {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}
