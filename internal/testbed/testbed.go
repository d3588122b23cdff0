package testbed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// Options configure Up.
type Options struct {
	// Name identifies the testbed; two testbeds with different names coexist.
	Name string
	// StateDir holds one directory per testbed (state file, control socket, logs).
	// Default: $CONTINUUM_STATE_DIR or /run/continuum.
	StateDir string
	// Seed seeds the fabric's loss and jitter draws.
	Seed int64
	// Launcher is the continuum binary used to enter nodes (default: this executable).
	Launcher string
	// Logger receives structured logs (default: discard).
	Logger *slog.Logger
	// NodePrefixes are IPv4 networks behind nodes, by node name (a Kubernetes node's pod
	// CIDR): the fabric carries packets to them as to the node's address, and every other node
	// routes them out of its eth0. Routing them on inside the node (a bridge, an address) is the
	// caller's. They may not overlap each other or the topology's network.
	NodePrefixes map[string][]netip.Prefix
}

// DefaultStateDir is where testbeds record themselves.
func DefaultStateDir() string {
	if d := os.Getenv("CONTINUUM_STATE_DIR"); d != "" {
		return d
	}
	return "/run/continuum"
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidName checks a testbed name (it becomes part of namespace and cgroup names).
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("invalid testbed name %q: use 1-32 characters a-z, 0-9 and '-', starting with a letter or digit", name)
	}
	return nil
}

type node struct {
	idx    int
	name   string
	ns     string
	tun    string
	addr   netip.Addr
	cgroup string          // relative cgroup path of the node
	nl     *netlink.Handle // in the node's namespace (nodeNetlink), guarded by the testbed's mu
	cpus   float64
	memory int64
	power  Power
}

// Testbed is a running emulated continuum.
type Testbed struct {
	Name string
	Topo *Topology

	opts     Options
	dir      string
	launcher string
	log      *slog.Logger
	cg       *cgroups
	fab      *fabric.Fabric
	nodes    []*node
	byName   map[string]*node
	links    map[[2]string]int // sorted pair -> link index

	mu    sync.Mutex
	procs map[string]*Proc
	// wrapped are WrapArgv's names and their nodes; each also holds a nil entry in procs.
	wrapped map[string]string
	faults  map[int]Fault       // active partitions by fabric id
	load    map[string]NodeLoad // latest sampler round by node (see publishLoad)
	down    bool
	ctl     *controlServer
}

// Up builds the testbed: state file first (so a crash at any later point is cleanable by
// DownAll), then cgroups, namespaces with TUN interfaces, the fabric and the control socket.
// On error everything created so far is removed.
func Up(topo *Topology, opts Options) (tb *Testbed, err error) {
	if err := ValidName(opts.Name); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("testbed: creating network namespaces, TUN devices and cgroups needs root " +
			"(CAP_NET_ADMIN and CAP_SYS_ADMIN); run continuum as root, e.g. with sudo")
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Launcher == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("testbed: find own executable: %w", err)
		}
		opts.Launcher = exe
	}
	cg, err := detectCgroups()
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	tb = &Testbed{Name: opts.Name, Topo: topo, opts: opts, launcher: opts.Launcher, log: opts.Logger, cg: cg,
		dir: filepath.Join(opts.StateDir, opts.Name), byName: map[string]*node{}, links: map[[2]string]int{},
		procs: map[string]*Proc{}, faults: map[int]Fault{}}
	addrs, prefix, err := topo.Addresses()
	if err != nil {
		return nil, err
	}
	if err := checkNodePrefixes(topo, prefix, opts.NodePrefixes); err != nil {
		return nil, err
	}
	for i, n := range topo.Nodes {
		nd := &node{idx: i, name: n.Name, ns: NodeNetns(opts.Name, n.Name), tun: tunName(opts.Name, n.Name),
			addr: addrs[n.Name], cgroup: NodeCgroup(opts.Name, n.Name),
			cpus: n.CPUs, memory: int64(n.Memory), power: n.Power}
		tb.nodes = append(tb.nodes, nd)
		tb.byName[n.Name] = nd
	}
	st := &State{Name: opts.Name, PID: os.Getpid(), Created: time.Now().UTC(), CgroupPath: Cgroup(opts.Name)}
	for _, n := range tb.nodes {
		st.Netns = append(st.Netns, n.ns)
		st.Links = append(st.Links, n.tun)
	}
	if err := createState(tb.dir, st); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tb.Down()
			tb = nil
		}
	}()
	if err := tb.buildNodes(topo, prefix); err != nil {
		return tb, err
	}
	ctl, err := startControl(tb)
	if err != nil {
		return tb, err
	}
	tb.ctl = ctl
	tb.log.Info("testbed up", "name", tb.Name, "nodes", len(tb.nodes), "links", len(topo.Links))
	return tb, nil
}

func (tb *Testbed) buildNodes(topo *Topology, prefix netip.Prefix) error {
	names := make([]string, len(tb.nodes))
	addrText := map[string]string{}
	for i, n := range tb.nodes {
		names[i] = n.name
		addrText[n.name] = n.addr.String()
	}
	mtu := topo.MTU
	if mtu == 0 {
		mtu = 1500
	}
	var fnodes []fabric.Node
	for _, n := range tb.nodes {
		if err := tb.cg.create(n.cgroup); err != nil {
			return err
		}
		if err := tb.cg.setCPU(n.cgroup, n.cpus); err != nil {
			return err
		}
		if err := tb.cg.setMemory(n.cgroup, n.memory); err != nil {
			return err
		}
		if netnsExists(n.ns) {
			return fmt.Errorf("testbed: namespace %s already exists (left by a crashed testbed?); run `continuum testbed down --all`", n.ns)
		}
		ipnet := &net.IPNet{IP: n.addr.AsSlice(), Mask: net.CIDRMask(prefix.Bits(), 32)}
		if err := setupNode(n.ns, n.tun, ipnet, mtu); err != nil {
			closeAll(fnodes)
			return err
		}
		ep, err := fabric.OpenAFPacket(n.tun, nodeMAC(ipnet.IP))
		if err != nil {
			closeAll(fnodes)
			return err
		}
		fnodes = append(fnodes, fabric.Node{Name: n.name, Addr: n.addr, Prefixes: tb.opts.NodePrefixes[n.name], Batch: ep})
		if err := writeHosts(n.ns, names, addrText); err != nil {
			return err
		}
	}
	var flinks []fabric.Link
	for i, l := range topo.Links {
		a, b := tb.byName[l.Between[0]], tb.byName[l.Between[1]]
		flinks = append(flinks, fabric.Link{A: a.idx, B: b.idx, Props: fabricProps(l.LinkProps)})
		tb.links[pairKey(a.name, b.name)] = i
	}
	f, err := fabric.New(fabric.Config{Nodes: fnodes, Links: flinks, MTU: mtu, Seed: tb.opts.Seed})
	if err != nil {
		closeAll(fnodes)
		return err
	}
	tb.fab = f
	for _, n := range tb.nodes {
		var others []netip.Prefix
		for _, o := range tb.nodes {
			if o != n {
				others = append(others, tb.opts.NodePrefixes[o.name]...)
			}
		}
		if err := routeOut(n.ns, others); err != nil {
			return err
		}
	}
	return nil
}

// reservedNets are IPv4 ranges no node prefix may touch: "this network", loopback, link-local,
// multicast and the reserved block with the broadcast address. A route for them out of eth0
// would change how every node treats such addresses.
var reservedNets = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("224.0.0.0/4"), netip.MustParsePrefix("240.0.0.0/4")}

// checkNodePrefixes checks Options.NodePrefixes against the topology: known nodes, IPv4
// networks outside the topology's network (the fabric checks them against each other).
func checkNodePrefixes(topo *Topology, network netip.Prefix, prefixes map[string][]netip.Prefix) error {
	for name, ps := range prefixes {
		if _, ok := topo.Node(name); !ok {
			return fmt.Errorf("testbed: prefixes given for node %q, which the topology does not have", name)
		}
		for _, p := range ps {
			if !p.IsValid() {
				continue // the fabric names it
			}
			if p.Overlaps(network) {
				return fmt.Errorf("testbed: node %q: prefix %v overlaps the topology's network %v", name, p, network)
			}
			for _, r := range reservedNets {
				if p.Overlaps(r) {
					return fmt.Errorf("testbed: node %q: prefix %v overlaps %v, which is no unicast space a node routes (refused: %v)", name, p, r, reservedNets)
				}
			}
		}
	}
	return nil
}

func closeAll(nodes []fabric.Node) {
	for _, fn := range nodes {
		fn.Batch.Close()
	}
}

func fabricProps(p LinkProps) fabric.Props {
	return fabric.Props{Delay: p.Delay.Duration, Jitter: p.Jitter.Duration, Loss: float64(p.Loss),
		Bandwidth: int64(p.Bandwidth), Queue: p.Queue}
}

func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// tunName derives a host-unique interface name (at most 15 bytes) for the host end of a node's
// veth pair (the fabric's side; the node's side is its eth0).
func tunName(testbed, node string) string {
	h := sha256.Sum256([]byte(testbed + "/" + node))
	return "ctm" + hex.EncodeToString(h[:5])
}

// NodeNetns is the network namespace (/run/netns/<it>) of node in testbed name.
func NodeNetns(name, node string) string { return "ctm-" + name + "-" + node }

// Cgroup is testbed name's cgroup, relative to every hierarchy's root: everything the testbed
// runs is below it.
func Cgroup(name string) string { return cgroupRoot + "/" + name }

// NodeCgroup is the cgroup of node in testbed name, relative to every hierarchy's root: its
// CPU quota and memory limit, and the parent of the cgroups of its processes (<it>/<process>),
// whose every process a node fault (kill, pause) signals. The testbed makes it in the cpu,
// cpuacct, memory and pids hierarchies (or the unified one) only.
func NodeCgroup(name, node string) string { return Cgroup(name) + "/" + node }

// Dir is the testbed's state directory (logs of CLI-started components land here).
func (tb *Testbed) Dir() string { return tb.dir }

// NodeNames lists the nodes in declaration order.
func (tb *Testbed) NodeNames() []string {
	out := make([]string, len(tb.nodes))
	for i, n := range tb.nodes {
		out[i] = n.name
	}
	return out
}

// NodeAddr returns a node's IPv4 address.
func (tb *Testbed) NodeAddr(name string) (netip.Addr, bool) {
	n, ok := tb.byName[name]
	if !ok {
		return netip.Addr{}, false
	}
	return n.addr, true
}

func (tb *Testbed) node(name string) (*node, error) {
	n, ok := tb.byName[name]
	if !ok {
		return nil, fmt.Errorf("no node %q (nodes: %s)", name, strings.Join(tb.NodeNames(), ", "))
	}
	return n, nil
}

// Down stops every process, removes namespaces, interfaces and cgroups and the state directory.
// It is idempotent and keeps going past errors, returning them joined.
func (tb *Testbed) Down() error {
	tb.mu.Lock()
	if tb.down {
		tb.mu.Unlock()
		return nil
	}
	tb.down = true
	procs := make([]*Proc, 0, len(tb.procs))
	for _, p := range tb.procs {
		if p != nil {
			procs = append(procs, p)
		}
	}
	tb.mu.Unlock()
	var errs []error
	if tb.ctl != nil {
		tb.ctl.close()
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Stop(2 * time.Second) }()
	}
	wg.Wait()
	if tb.fab != nil {
		errs = append(errs, tb.fab.Close())
	}
	tb.closeNetlink()
	st := &State{Name: tb.Name, CgroupPath: Cgroup(tb.Name)}
	for _, n := range tb.nodes {
		st.Netns = append(st.Netns, n.ns)
		st.Links = append(st.Links, n.tun)
	}
	errs = append(errs, cleanupState(tb.cg, tb.dir, st))
	tb.log.Info("testbed down", "name", tb.Name)
	return errors.Join(errs...)
}
