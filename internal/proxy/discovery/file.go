package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
)

// FileKey is the file source's key in the proxy configuration's discovery list.
const FileKey = "file"

// DefaultFileInterval is how often the file source looks for changes.
const DefaultFileInterval = time.Second

func init() { RegisterSource(FileKey, newFileFromYAML) }

// FileConfig configures a File source. In the proxy configuration it is written either as the
// path alone (`- file: /etc/continuum/instances.yaml`) or as a mapping
// (`- file: {path: ..., interval: 2s}`).
type FileConfig struct {
	// Path of the instances file (format in File's doc).
	Path string `yaml:"path"`
	// Interval between checks for changes (default 1 s).
	Interval spec.Duration `yaml:"interval"`
	// Logger receives reload errors; nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// File is a source backed by a static YAML file that operators (or scripts) edit:
//
//	instances:
//	  - {id: s1, service: dps, url: http://10.0.0.1:8080, node: worker1,
//	     attributes: {accuracy: 0.97, tier: edge}}       # ready defaults to true
//	  - {id: s2, service: dps, url: http://10.0.0.2:8080, node: worker2, ready: false}
//	nodes:
//	  worker1: {cpu: 0.42, memory: 0.30}
//
// The file is checked every Interval: a change of modification time, size or inode makes it
// read again, and a snapshot is delivered only when the content's hash changed. An edit that
// does not parse or validate is logged with file:line and the last good snapshot stays in force,
// so a half-written file never empties the proxy's pools. Writers should still replace the
// file atomically (write a temporary file, rename it over), as editors and ConfigMap mounts do.
type File struct {
	cfg  FileConfig
	log  *slog.Logger
	snap Snapshot // the snapshot read by NewFile; Run starts from it
	hash [32]byte
	stat fileStat
}

type fileStat struct {
	mod  time.Time
	size int64
	ino  uint64
}

// NewFile reads and validates the file once, so that a broken file is an error at start-up
// (with file:line) rather than an empty pool later.
func NewFile(cfg FileConfig) (*File, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("file source: path: required")
	}
	if cfg.Interval.Duration < 0 {
		return nil, fmt.Errorf("file source %s: interval %v: must be >= 0 (0 means %v)", cfg.Path, cfg.Interval, DefaultFileInterval)
	}
	if cfg.Interval.Duration == 0 {
		cfg.Interval.Duration = DefaultFileInterval
	}
	f := &File{cfg: cfg, log: cfg.Logger}
	if f.log == nil {
		f.log = slog.Default()
	}
	st, err := statFile(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("file source: %w", err)
	}
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("file source: %w", err)
	}
	snap, err := ParseInstancesFile(cfg.Path, data)
	if err != nil {
		return nil, err
	}
	f.snap, f.hash, f.stat = snap, sha256.Sum256(data), st
	return f, nil
}

func newFileFromYAML(n *yaml.Node) (Source, error) {
	var cfg FileConfig
	switch {
	case n == nil:
		return nil, fmt.Errorf("file: want a path or {path: ..., interval: ...}")
	case n.Kind == yaml.ScalarNode:
		cfg.Path = n.Value
	default:
		if err := spec.DecodeAt("", FileKey, n, &cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Path == "" {
		return nil, spec.Errorf("", n, "file: path: required (the instances file)")
	}
	return NewFile(cfg)
}

// Name implements Source.
func (f *File) Name() string { return "file:" + f.cfg.Path }

// Run implements Source: it delivers the snapshot read at start, then one per valid change.
func (f *File) Run(ctx context.Context, update func(Snapshot)) error {
	update(f.snap)
	t := time.NewTicker(f.cfg.Interval.Duration)
	defer t.Stop()
	missing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		st, err := statFile(f.cfg.Path)
		if err != nil {
			// A rename-over leaves the path missing for an instant; say so once, keep serving.
			if !missing {
				f.log.Error("instances file unreadable; keeping the last good snapshot", "source", f.Name(), "err", err)
			}
			missing = true
			continue
		}
		missing = false
		if st == f.stat {
			continue
		}
		data, err := os.ReadFile(f.cfg.Path)
		if err != nil {
			f.log.Error("instances file unreadable; keeping the last good snapshot", "source", f.Name(), "err", err)
			continue
		}
		f.stat = st
		h := sha256.Sum256(data)
		if h == f.hash {
			continue
		}
		f.hash = h
		snap, err := ParseInstancesFile(f.cfg.Path, data)
		if err != nil {
			f.log.Error("invalid instances file; keeping the last good snapshot", "source", f.Name(), "err", err)
			continue
		}
		f.log.Info("instances file reloaded", "source", f.Name(), "instances", len(snap.Instances), "nodes", len(snap.Nodes))
		update(snap)
	}
}

func statFile(path string) (fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStat{}, err
	}
	if !fi.Mode().IsRegular() {
		return fileStat{}, fmt.Errorf("%s: not a regular file", path)
	}
	return fileStat{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}, nil
}

// fileInstance is Instance as written in the file: Ready is optional and defaults to true,
// because a hand-written list names instances that are meant to take traffic.
type fileInstance struct {
	ID         string            `yaml:"id"`
	Service    string            `yaml:"service"`
	URL        string            `yaml:"url"`
	Node       string            `yaml:"node"`
	Attributes map[string]string `yaml:"attributes"`
	Ready      *bool             `yaml:"ready"`
}

type instancesFile struct {
	Instances []fileInstance      `yaml:"instances"`
	Nodes     map[string]NodeLoad `yaml:"nodes"`
}

// ValidServiceName reports whether name can name a service: 1..253 letters, digits, '-', '_'
// or '.', starting with a letter or digit (a DNS-label-like name, as the Host header's first
// label carries it). The proxy checks every request's name with it, hence no regexp.
func ValidServiceName(name string) bool {
	if len(name) == 0 || len(name) > 253 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// ParseInstancesFile decodes and validates an instances file (see File); file names it in
// errors, which carry line numbers and name every problem at once.
func ParseInstancesFile(file string, data []byte) (Snapshot, error) {
	var snap Snapshot
	if len(bytes.TrimSpace(data)) == 0 {
		return snap, &spec.Error{File: file, Msg: "the file is empty (want instances: [...] and optionally nodes: {...})"}
	}
	root, err := spec.Parse(file, data)
	if err != nil {
		return snap, err
	}
	var doc instancesFile
	if err := spec.Decode(file, root, &doc); err != nil {
		return snap, err
	}
	var errs spec.Errors
	seen := map[string]int{}
	for i, fi := range doc.Instances {
		at := spec.Locate(root, "instances", i)
		where := fmt.Sprintf("instances[%d]", i)
		if fi.ID == "" {
			errs.Addf(file, at, "%s.id: required (unique across all services)", where)
		} else if err := CheckInstanceID(fi.ID); err != nil {
			errs.Addf(file, spec.Locate(root, "instances", i, "id"), "%s.id: %v", where, err)
		} else if j, dup := seen[fi.ID]; dup {
			errs.Addf(file, spec.Locate(root, "instances", i, "id"), "%s.id %q: already used by instances[%d]", where, fi.ID, j)
		} else {
			seen[fi.ID] = i
		}
		if !ValidServiceName(fi.Service) {
			errs.Addf(file, spec.Locate(root, "instances", i, "service"), "%s.service %q: want letters, digits, '-', '_' or '.', starting with a letter or digit", where, fi.Service)
		}
		if err := CheckInstanceURL(fi.URL); err != nil {
			errs.Addf(file, spec.Locate(root, "instances", i, "url"), "%s.url: %v", where, err)
		}
		ready := fi.Ready == nil || *fi.Ready
		snap.Instances = append(snap.Instances, Instance{ID: fi.ID, Service: fi.Service, URL: fi.URL,
			Node: fi.Node, Attributes: fi.Attributes, Ready: ready})
	}
	names := make([]string, 0, len(doc.Nodes))
	for name := range doc.Nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l := doc.Nodes[name]
		for _, v := range []struct {
			field string
			val   float64
		}{{"cpu", l.CPU}, {"memory", l.Memory}} {
			if v.val < 0 || math.IsNaN(v.val) || math.IsInf(v.val, 0) {
				errs.Addf(file, spec.Locate(root, "nodes", name, v.field), "nodes.%s.%s %v: want a fraction >= 0 (1 = fully used)", name, v.field, v.val)
			}
		}
	}
	if err := errs.Err(); err != nil {
		return Snapshot{}, err
	}
	snap.Nodes = doc.Nodes
	return snap, nil
}

// MaxInstanceIDLen bounds an instance ID.
const MaxInstanceIDLen = 256

// CheckInstanceID accepts what the proxy can write into the X-Continuum-Instance field of
// every answer: 1..MaxInstanceIDLen bytes of visible ASCII, spaces inside. A control
// character (CR, LF, NUL, ...) would split or corrupt the answer's head, and sources take IDs
// from places anyone registering an instance writes (a kv key takes any bytes). The proxy
// checks every instance of every source with it as the snapshots are united
// (internal/proxy/sources); sources that can say where an ID came from check it too.
func CheckInstanceID(id string) error {
	if id == "" || len(id) > MaxInstanceIDLen {
		return fmt.Errorf("%q: want 1 to %d bytes", id, MaxInstanceIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < ' ' || c > '~' || c == ' ' && (i == 0 || i == len(id)-1) {
			return fmt.Errorf("%q: byte %d (0x%02x) is not allowed: want visible ASCII (spaces only inside), since the ID is sent in the %s header", id, i, c, "X-Continuum-Instance")
		}
	}
	return nil
}

// CheckInstanceURL accepts what the proxy can forward to: http or https with a host and a
// port or default port, and no path beyond "/" (requests keep their own path).
func CheckInstanceURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %v", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want http://host:port or https://host:port", raw)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want no path, query or fragment (requests keep their own)", raw)
	}
	if u.User != nil {
		return fmt.Errorf("%q: credentials in the URL are not supported", raw)
	}
	return nil
}
