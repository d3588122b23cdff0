package experiment

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress renders the live status of an experiment: phase, elapsed/ETA, current throughput and
// errors. On a terminal it redraws one line; otherwise it prints a line every 5 s.
type progress struct {
	mu          sync.Mutex
	w           io.Writer
	interactive bool
	total       int
	stop        chan struct{}
	wg          sync.WaitGroup
	lastWidth   int
}

func newProgress(w io.Writer, interactive bool, total int) *progress {
	return &progress{w: w, interactive: interactive, total: total}
}

func (p *progress) printf(format string, args ...any) {
	if p.w == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	if p.interactive {
		pad := ""
		if n := p.lastWidth - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
		p.lastWidth = len(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// phase shows a setup or teardown step and stops the running ticker.
func (p *progress) phase(index int, id, what string) {
	p.stopTicker()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printf("[run %s %d/%d] %s", id, index+1, p.total, what)
}

// note prints a line that stays (events, failures) above the progress line.
func (p *progress) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	if p.interactive {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastWidth))
		p.lastWidth = 0
	}
	fmt.Fprintln(p.w, msg)
}

// running updates the line every second until the next phase, with what the workloads say of
// their progress (work).
func (p *progress) running(index int, id string, t0 time.Time, duration time.Duration, work func() string) {
	p.stopTicker()
	p.mu.Lock()
	p.stop = make(chan struct{})
	stop := p.stop
	p.mu.Unlock()
	every := time.Second
	if !p.interactive {
		every = 5 * time.Second
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			el := time.Since(t0).Truncate(time.Second)
			eta := max(duration-el, 0).Truncate(time.Second)
			line := fmt.Sprintf("[run %s %d/%d] running %v/%v  ETA %v", id, index+1, p.total, el, duration, eta)
			if w := work(); w != "" {
				line += "  " + w
			}
			p.mu.Lock()
			p.printf("%s", line)
			p.mu.Unlock()
		}
	}()
}

func (p *progress) stopTicker() {
	p.mu.Lock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *progress) finish() {
	p.stopTicker()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil && p.interactive && p.lastWidth > 0 {
		fmt.Fprintln(p.w)
	}
}
