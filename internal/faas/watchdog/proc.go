package watchdog

import (
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTicks = 100

// procCPUSeconds is a process's CPU time and that of its children it has waited for
// (/proc/PID/stat utime, stime, cutime, cstime); 0 when it cannot be read.
func procCPUSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: fields count from its end.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is f[0], so utime (field 14) is f[11] .. cstime (17) f[14].
	if len(f) < 15 {
		return 0
	}
	var ticks float64
	for _, x := range f[11:15] {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return ticks / clockTicks
}
