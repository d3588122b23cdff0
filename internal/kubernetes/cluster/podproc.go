package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// PodProcesses are the processes of pod uid on the node whose kubelet's cgroup root is
// cgroupRoot (FabricCluster.CgroupRoots): those listed in the pod's cgroup and its containers'
// below it, in kubelet's cgroupfs layout (kubepods/pod<uid>, kubepods/burstable/pod<uid> or
// kubepods/besteffort/pod<uid>). Only root can put a process there: a runner that enters a pod's
// network namespace through one of them enters the pod's, not one a process elsewhere on the
// host named after the pod.
func PodProcesses(cgroupRoot, uid string) ([]int, error) {
	if strings.ContainsAny(uid, "/.") || uid == "" {
		return nil, fmt.Errorf("pod uid %q: want the API server's UID", uid)
	}
	var pids []int
	for _, qos := range []string{"", "burstable", "besteffort"} {
		for _, dir := range cgroupDirs(filepath.Join(cgroupRoot, "kubepods", qos, "pod"+uid)) {
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
		if len(pids) > 0 {
			return pids, nil
		}
	}
	return nil, fmt.Errorf("no process of pod %s under the cgroup root %s", uid, cgroupRoot)
}
