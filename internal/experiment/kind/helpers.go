package kind

import (
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DataDir is the configured data directory, or <instance results dir>/data.
func DataDir(env Env, configured string) string {
	if configured != "" {
		return configured
	}
	return filepath.Join(env.OutDir, "data")
}

// NodeHost is a node's address, else its name (which every node resolves).
func (env Env) NodeHost(node string) string {
	if a := env.Nodes[node]; a != "" {
		return a
	}
	return node
}

// AdvertisedURL is the http URL other nodes reach this instance's port at.
func (env Env) AdvertisedURL(port int) string {
	return "http://" + net.JoinHostPort(env.NodeHost(env.Node), strconv.Itoa(port))
}

// MemberURLs maps every component for which member reports a port (the members of the caller's
// cluster, typically: same kind, same cluster name) to the http URL of that port at its node.
func (env Env) MemberURLs(member func(name string, c Component) (port int, ok bool)) map[string]string {
	out := map[string]string{}
	for name, c := range env.Components {
		port, ok := member(name, c)
		if !ok {
			continue
		}
		out[name] = "http://" + net.JoinHostPort(env.NodeHost(c.Node), strconv.Itoa(port))
	}
	return out
}

// InitialCluster renders members as etcd's --initial-cluster (name=url,...), in name order.
func InitialCluster(members map[string]string) string {
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + members[n]
	}
	return strings.Join(parts, ",")
}
