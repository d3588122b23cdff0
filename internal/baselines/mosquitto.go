package baselines

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

// MosquittoBinary finds the MQTT broker: bin, $CONTINUUM_MOSQUITTO_BIN, .tools/bin, PATH, then
// /usr/sbin/mosquitto (Debian's package, which `make setup` installs, puts it there, outside a
// non-root PATH).
func MosquittoBinary(bin string) (string, error) {
	p, err := lookBinary(bin, "CONTINUUM_MOSQUITTO_BIN", "mosquitto")
	if err != nil && bin == "" && os.Getenv("CONTINUUM_MOSQUITTO_BIN") == "" {
		if fi, serr := os.Stat("/usr/sbin/mosquitto"); serr == nil && !fi.IsDir() {
			return "/usr/sbin/mosquitto", nil
		}
	}
	return p, err
}

// MosquittoDefaultQueue is max_queued_messages: QoS 1 messages a broker holds per slow
// subscriber before it drops new ones (mosquitto's default, 1000, drops within a fraction of
// a second at the rates of seeds/001 when an adaptor's POSTs stall it).
const MosquittoDefaultQueue = 100000

// MosquittoConf is mosquitto's configuration: one listener on host:port for anonymous
// clients, no persistence (devices' readings are not kept across restarts), maxQueued QoS 1
// messages per subscriber (0: MosquittoDefaultQueue) and up to 1000 of them in flight
// (mosquitto's default, 20, caps a subscriber at 20 messages per round trip), Nagle off, and
// errors, warnings and notices to stderr.
func MosquittoConf(host string, port, maxQueued int) string {
	if maxQueued == 0 {
		maxQueued = MosquittoDefaultQueue
	}
	return "listener " + strconv.Itoa(port) + " " + host + "\n" +
		"allow_anonymous true\npersistence false\nset_tcp_nodelay true\n" +
		"max_queued_messages " + strconv.Itoa(maxQueued) + "\nmax_inflight_messages 1000\n" +
		"log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nconnection_messages false\n"
}

// StartMosquitto starts the MQTT broker on a free loopback port; Target.Endpoints[0] is its
// host:port. Ready once it accepts TCP connections.
func StartMosquitto(ctx context.Context, cfg Config) (*Server, error) {
	bin, port, dataDir, err := prepare(cfg, MosquittoBinary)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	conf := filepath.Join(dataDir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(MosquittoConf("127.0.0.1", port, 0)), 0o644); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{bin, "-c", conf}, cfg.ExtraArgs...)
	ready := func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("mosquitto: %w", err)
		}
		return c.Close()
	}
	return start(ctx, "mosquitto", kvtarget.Target{Kind: "mqtt", Endpoints: []string{addr}}, dataDir,
		filepath.Join(cfg.Dir, "server.log"), args, cfg.ReadyTimeout, ready)
}
