package proxybench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memory is a process's resident memory from /proc/PID/status, in bytes: VmRSS is what the
// goal is stated in; RssAnon is the process's own memory, RssFile the mapped binary (shared
// page cache, mostly the executable's code and tables).
type memory struct {
	VmRSS   int64 `json:"vm_rss_bytes"`
	RssAnon int64 `json:"rss_anon_bytes"`
	RssFile int64 `json:"rss_file_bytes"`
}

func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (memory, error) {
	var m memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	found := 0
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.VmRSS
		case "RssAnon":
			dst = &m.RssAnon
		case "RssFile":
			dst = &m.RssFile
		default:
			continue
		}
		f := strings.Fields(v) // "14704 kB"
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("status %s: unexpected %q", k, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("status %s: %w", k, err)
		}
		*dst = n << 10
		found++
	}
	if found < 3 {
		return m, fmt.Errorf("status: VmRSS, RssAnon or RssFile missing")
	}
	return m, nil
}
