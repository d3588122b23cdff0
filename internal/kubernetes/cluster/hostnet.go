package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The host settings a cluster changes and Down puts back.

// sysctls are the kernel settings a cluster changes, whose values before Up Down restores:
// forwarding, so that the node routes between pods and Services (Up and the CNI bridge plugin
// turn it on), and the tunables kubelet sets at its start whenever it does not protect the
// kernel's defaults (kubeletTunables: without them in this list, one `cluster up` left a host
// set to reboot 10 s after any kernel oops).
var sysctls = append([]string{ipForward}, slices.Sorted(maps.Keys(kubeletTunables))...)

// ipForward is the forwarding switch of the namespace that opens it.
const ipForward = "net/ipv4/ip_forward"

// kubeletTunables are the values kubelet writes (setupKernelTunables in kubelet's container
// manager, Kubernetes 1.37).
var kubeletTunables = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// containerLogLinks is where kubelet links every container's log file (a path it does not let
// one configure); the files themselves live under the cluster's state directory (podLogsDir).
const containerLogLinks = "/var/log/containers"

// removeContainerLogLinks removes the links in containerLogLinks that point into the cluster's
// state directory root: kubelet removes a container's link only when it removes the
// container, which a stopped cluster's kubelet no longer does.
func removeContainerLogLinks(root string) error {
	entries, err := os.ReadDir(containerLogLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		link := filepath.Join(containerLogLinks, e.Name())
		target, err := os.Readlink(link)
		if err != nil {
			continue // not a link: not kubelet's
		}
		if rel, err := filepath.Rel(root, target); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// devicePluginDir is where every kubelet on the host serves its device plugins' registration
// socket, whatever its root directory (pluginapi.DevicePluginPath: not configurable). Each
// kubelet empties it of sockets when it starts and leaves its own behind when it stops, so
// several kubelets share one socket path (the last one started serves it; the device plugins
// the cluster does not use would register with that one) and a stopped cluster leaves a stale
// socket.
const devicePluginDir = "/var/lib/kubelet/device-plugins"

// kubeletHostDirs are the directories outside the state directory that kubelet makes,
// parents first: the sweep removes those Up did not find, once empty.
var kubeletHostDirs = []string{filepath.Dir(devicePluginDir), devicePluginDir}

// removeStaleKubeletSocket removes the registration socket in devicePluginDir if no kubelet
// answers on it: the one a stopped kubelet left. A kubelet of another cluster that serves it
// keeps it.
func removeStaleKubeletSocket() error {
	sock := filepath.Join(devicePluginDir, "kubelet.sock")
	if _, err := os.Lstat(sock); err != nil {
		return nil
	}
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err == nil {
		c.Close()
		return nil
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return nil // not a socket nobody serves: not ours to judge
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// missingDirs are those of dirs that do not exist.
func missingDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}

func readSysctls() (map[string]string, error) {
	out := map[string]string{}
	for _, k := range sysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			return nil, err
		}
		out[k] = strings.TrimSpace(string(b))
	}
	return out, nil
}

// restoreSysctls writes back the values saved before Up, each only while the setting still holds
// what the cluster set (forwarding on, kubelet's tunables): one that another program (or
// another cluster's Down) changed since is theirs now, and left alone.
func restoreSysctls(saved map[string]string) error {
	var errs []error
	for k, v := range saved {
		set, ok := kubeletTunables[k]
		if k == ipForward {
			set, ok = "1", true
		}
		if b, err := os.ReadFile("/proc/sys/" + k); err != nil || !ok || strings.TrimSpace(string(b)) != set {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v+"\n"), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// iptablesChains lists "<family> <table> <chain>" of every iptables chain on the host (IPv4
// and IPv6), so that Down can delete exactly the chains that appeared while the cluster ran:
// the CNI portmap plugin's CNI-HOSTPORT-* chains, which it never removes, and kubelet's
// KUBE-* canaries.
func iptablesChains() ([]string, error) {
	out := []string{} // not nil: nil means "not recorded"
	for _, fam := range []string{"iptables", "ip6tables"} {
		rules, err := exec.Command(fam + "-save").Output()
		if err != nil {
			return nil, fmt.Errorf("%s-save: %w", fam, err)
		}
		table := ""
		for _, line := range strings.Split(string(rules), "\n") {
			switch {
			case strings.HasPrefix(line, "*"):
				table = line[1:]
			case strings.HasPrefix(line, ":"):
				out = append(out, fam+" "+table+" "+strings.Fields(line[1:])[0])
			}
		}
	}
	return out, nil
}

// builtinChains are never deleted.
var builtinChains = map[string]bool{"PREROUTING": true, "INPUT": true, "FORWARD": true, "OUTPUT": true, "POSTROUTING": true}

// removeNewChains deletes the iptables chains that exist now but not in before, with every rule
// that jumps to them. before nil means nothing was recorded: nothing is deleted.
func removeNewChains(before []string) error {
	if before == nil {
		return nil
	}
	had := map[string]bool{}
	for _, c := range before {
		had[c] = true
	}
	now, err := iptablesChains()
	if err != nil {
		return err
	}
	var errs []error
	for _, fam := range []string{"iptables", "ip6tables"} {
		byTable := map[string][]string{}
		for _, c := range now {
			f := strings.Fields(c)
			if f[0] == fam && !had[c] && !builtinChains[f[2]] {
				byTable[f[1]] = append(byTable[f[1]], f[2])
			}
		}
		for table, chains := range byTable {
			errs = append(errs, deleteChains(fam, table, chains))
		}
	}
	return errors.Join(errs...)
}

// deleteChains removes the jumps to chains from the table's other chains, then flushes and
// deletes them.
func deleteChains(fam, table string, chains []string) error {
	gone := map[string]bool{}
	for _, c := range chains {
		gone[c] = true
	}
	rules, err := exec.Command(fam+"-save", "-t", table).Output()
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(string(rules), "\n") {
		f := splitRule(line)
		if len(f) < 2 || f[0] != "-A" || gone[f[1]] {
			continue
		}
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "-j" || f[i] == "-g") && gone[f[i+1]] {
				args := append([]string{"-t", table, "-D"}, f[1:]...)
				if out, err := exec.Command(fam, args...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s %s: %v: %s", fam, strings.Join(args, " "), err, out))
				}
				break
			}
		}
	}
	for _, c := range chains {
		_ = exec.Command(fam, "-t", table, "-F", c).Run()
	}
	for _, c := range chains {
		if out, err := exec.Command(fam, "-t", table, "-X", c).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s -t %s -X %s: %v: %s", fam, table, c, err, out))
		}
	}
	return errors.Join(errs...)
}

// splitRule splits an iptables-save rule into arguments as a shell would: a double-quoted
// argument (a comment) is one argument, with \" inside it a quote.
func splitRule(line string) []string {
	var out []string
	var cur strings.Builder
	inArg, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			quoted, inArg = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if inArg {
				out = append(out, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		out = append(out, cur.String())
	}
	return out
}

// nftTables lists "<family> <name>" of every nftables table. iptables-nft creates its tables
// (ip filter, ip nat, ...) on first use, so a host that had none gets them from kubelet's
// canaries: Down deletes the tables that appeared, once they hold no rule.
func nftTables() ([]string, error) {
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil, fmt.Errorf("nft list tables: %w", err)
	}
	tables := []string{} // not nil: nil means "not recorded"
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "table" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	return tables, nil
}

// removeNewTables deletes the tables that exist now but not in before and hold no rules.
func removeNewTables(before []string) error {
	if before == nil {
		return nil
	}
	had := map[string]bool{}
	for _, t := range before {
		had[t] = true
	}
	now, err := nftTables()
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range now {
		if had[t] {
			continue
		}
		f := strings.Fields(t)
		out, err := exec.Command("nft", "-j", "list", "table", f[0], f[1]).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("nft list table %s: %w", t, err))
			continue
		}
		if strings.Contains(string(out), `{"rule":`) {
			continue // someone else's rules: leave the table
		}
		if out, err := exec.Command("nft", "delete", "table", f[0], f[1]).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s: %v: %s", t, err, out))
		}
	}
	return errors.Join(errs...)
}
