package kubebench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
)

// measureRestart kills the store with SIGKILL under the running apiserver, keeps it down for
// down, restarts it on the same data directory and ports, and times (from the restart) the
// store's readiness, the apiserver's first /readyz 200 after it, and the first create that
// succeeds after it. /readyz is polled from the kill on, for what it reports meanwhile.
func measureRestart(ctx context.Context, cfg Config, srv *baselines.Server, cp *controlplane.ControlPlane, cs kubernetes.Interface, down time.Duration) Restart {
	r := Restart{DownS: down.Seconds()}
	logPath := cp.LogPath(controlplane.APIServerBinary)
	var logOff int64
	if fi, err := os.Stat(logPath); err == nil {
		logOff = fi.Size()
	}
	ctx, cancel := context.WithTimeout(ctx, down+cfg.RestartTimeout)
	defer cancel()

	var storeBack atomic.Bool
	var mu sync.Mutex // guards checks and t0 between the poller and the restart
	checks := map[string]bool{}
	t0 := time.Now()
	var readyAt time.Duration
	var wg sync.WaitGroup
	// /readyz every 100 ms: the failures it names while the store is down or the apiserver has
	// not yet noticed it is back; ready counts only once the store is back.
	wg.Go(func() {
		for ctx.Err() == nil {
			back := storeBack.Load()
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			ok, detail := cp.Readyz(pctx)
			pcancel()
			mu.Lock()
			if ok && back {
				readyAt = time.Since(t0)
				mu.Unlock()
				return
			}
			if !ok {
				checks[normalizeCheck(detail)] = true
			}
			mu.Unlock()
			sleep(ctx, 100*time.Millisecond)
		}
	})
	_ = syscall.Kill(-srv.PID(), syscall.SIGKILL)
	<-srv.Done()
	sleep(ctx, down)
	mu.Lock()
	t0 = time.Now()
	mu.Unlock()
	// Restart on a stopped server relaunches it with the same command line and waits for it.
	if err := srv.Restart(ctx); err != nil {
		cancel()
		wg.Wait()
		r.Error = "store restart: " + err.Error()
		return r
	}
	r.StoreReadyS = time.Since(t0).Seconds()
	storeBack.Store(true)
	var createAt time.Duration
	var createErr error
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cs.CoreV1().ConfigMaps(namespace).Create(cctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("after-restart-%d-%d", down.Milliseconds(), i)}}, metav1.CreateOptions{})
			ccancel()
			if err == nil {
				createAt = time.Since(t0)
				return
			}
			createErr = err
			sleep(ctx, 100*time.Millisecond)
		}
	})
	wg.Wait()
	r.ReadyzS, r.CreateS = readyAt.Seconds(), createAt.Seconds()
	switch {
	case readyAt == 0:
		r.Error = fmt.Sprintf("/readyz not 200 within %v of the restart", cfg.RestartTimeout)
	case createAt == 0:
		r.Error = fmt.Sprintf("no create succeeded within %v of the restart: %v", cfg.RestartTimeout, createErr)
	}
	r.ReadyzFailed = len(checks) > 0
	for c := range checks {
		r.Checks = append(r.Checks, c)
	}
	slices.Sort(r.Checks)
	r.Log = logSince(logPath, logOff, 8)
	return r
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// digits are replaced in checks and log messages so that lines differing only in a number, a
// port or a time count as one.
var digits = regexp.MustCompile(`[0-9]+`)

// normalizeCheck makes a /readyz failure comparable across polls.
func normalizeCheck(detail string) string {
	return digits.ReplaceAllString(detail, "N")
}

// klogLine matches klog's header ("E1126 22:53:07.123456   12345 file.go:12] message").
var klogLine = regexp.MustCompile(`^([EWF])\d{4} [0-9:.]+\s+\d+ ([^\]]+)\] (.*)$`)

// logSince returns the apiserver's warnings and errors written after offset, distinct by
// message (numbers masked), most frequent first, at most n of them, each with its count.
func logSince(path string, offset int64, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil
	}
	return summarizeLog(bufio.NewScanner(f), n)
}

// summarizeLog keeps klog's W, E and F lines, groups them by source and message (numbers
// masked, cut at 240 bytes) and renders "count× [source] message" for the n most frequent
// (ties in order of first appearance).
func summarizeLog(sc *bufio.Scanner, n int) []string {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	type entry struct {
		text  string
		count int
		first int
	}
	byKey := map[string]*entry{}
	i := 0
	for sc.Scan() {
		m := klogLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		msg := digits.ReplaceAllString(m[3], "N")
		if len(msg) > 240 {
			msg = msg[:240] + "..."
		}
		key := m[1] + " [" + digits.ReplaceAllString(m[2], "N") + "] " + msg
		if e, ok := byKey[key]; ok {
			e.count++
			continue
		}
		byKey[key] = &entry{text: key, count: 1, first: i}
		i++
	}
	entries := make([]*entry, 0, len(byKey))
	for _, e := range byKey {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *entry) int {
		if a.count != b.count {
			return b.count - a.count
		}
		return a.first - b.first
	})
	var out []string
	for _, e := range entries[:min(n, len(entries))] {
		out = append(out, fmt.Sprintf("%d× %s", e.count, strings.TrimSpace(e.text)))
	}
	return out
}
