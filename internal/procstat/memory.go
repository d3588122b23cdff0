package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident memory from /proc/PID/status, in bytes: VmRSS is the whole
// resident set (what memory goals are stated in); RssAnon is the process's own memory, RssFile
// its mapped files (shared page cache, mostly the executable's code and tables).
type Memory struct {
	VmRSS   int64 `json:"vm_rss_bytes"`
	RssAnon int64 `json:"rss_anon_bytes"`
	RssFile int64 `json:"rss_file_bytes"`
}

// ReadMemory reads process pid's resident memory.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Memory{}, err
	}
	return ParseStatus(b)
}

// RSS is process pid's resident set size (VmRSS) in bytes.
func RSS(pid int) (int64, error) {
	m, err := ReadMemory(pid)
	return m.VmRSS, err
}

// ParseStatus reads VmRSS, RssAnon and RssFile from the text of /proc/PID/status (Linux 4.5
// and later have all three; a file without them is an error, not zeros).
func ParseStatus(b []byte) (Memory, error) {
	var m Memory
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
