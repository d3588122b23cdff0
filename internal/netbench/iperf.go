package netbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
)

// IperfResult is what one iperf3 TCP test measured, from the client's JSON report (`iperf3 -c
// ... -J`). Goodput is the receiver's figure: the bytes the server read over the test's
// duration, which is what a bandwidth limit must be judged on (the sender's count includes
// bytes still queued in the link when the test ended).
type IperfResult struct {
	Streams       int     `json:"streams"`
	Seconds       float64 `json:"seconds"` // receiver's duration
	BytesReceived int64   `json:"bytes_received"`
	GoodputBps    float64 `json:"goodput_bps"` // receiver bits/s
	SenderBps     float64 `json:"sender_bps"`
	Retransmits   int64   `json:"retransmits"`
	// Congestion is the sender's TCP congestion control as iperf3 reported it (e.g. "bbr").
	Congestion string `json:"congestion,omitempty"`
	MSS        int    `json:"mss,omitempty"` // the connection's default MSS, bytes
	// HostCPU and RemoteCPU are iperf3's own CPU use (client and server), percent of one core.
	HostCPU   float64 `json:"host_cpu_percent"`
	RemoteCPU float64 `json:"remote_cpu_percent"`
}

// Gbps is the goodput in Gbit/s.
func (r *IperfResult) Gbps() float64 { return r.GoodputBps / 1e9 }

// iperfReport is the part of iperf3's JSON that ParseIperf reads.
type iperfReport struct {
	Start struct {
		TCPMSSDefault int `json:"tcp_mss_default"`
		TestStart     struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		SumSent *struct {
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   int64   `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived *struct {
			Seconds       float64 `json:"seconds"`
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		CPU struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
		SenderCongestion string `json:"sender_tcp_congestion"`
	} `json:"end"`
	Error string `json:"error"`
}

// errIperfConnect marks a report saying the client could not reach the server (not listening
// yet), which the caller retries.
var errIperfConnect = errors.New("iperf3 could not connect")

// ParseIperf reads an iperf3 client's JSON report of a TCP test. A report carrying iperf3's own
// error, or lacking the receiver's summary, is an error naming what was missing.
func ParseIperf(b []byte) (*IperfResult, error) {
	var rep iperfReport
	if err := json.Unmarshal(bytes.TrimSpace(b), &rep); err != nil {
		return nil, fmt.Errorf("iperf3 report is not JSON: %w", err)
	}
	if rep.Error != "" {
		if strings.Contains(rep.Error, "unable to connect") {
			return nil, fmt.Errorf("%w: %s", errIperfConnect, rep.Error)
		}
		return nil, fmt.Errorf("iperf3: %s", rep.Error)
	}
	if p := rep.Start.TestStart.Protocol; p != "TCP" {
		return nil, fmt.Errorf("iperf3 report is of a %q test, want TCP", p)
	}
	rcv, snd := rep.End.SumReceived, rep.End.SumSent
	if rcv == nil || snd == nil {
		return nil, errors.New("iperf3 report has no end.sum_received/end.sum_sent (test did not finish)")
	}
	if rcv.Seconds <= 0 {
		return nil, fmt.Errorf("iperf3 report: receiver's duration %v s, want > 0", rcv.Seconds)
	}
	return &IperfResult{
		Streams:       rep.Start.TestStart.NumStreams,
		Seconds:       rcv.Seconds,
		BytesReceived: rcv.Bytes,
		GoodputBps:    rcv.BitsPerSecond,
		SenderBps:     snd.BitsPerSecond,
		Retransmits:   snd.Retransmits,
		Congestion:    rep.End.SenderCongestion,
		MSS:           rep.Start.TCPMSSDefault,
		HostCPU:       rep.End.CPU.HostTotal,
		RemoteCPU:     rep.End.CPU.RemoteTotal,
	}, nil
}

// iperfPort is where the iperf3 server listens inside its node.
const iperfPort = "5201"

// startIperfServer runs `iperf3 -s` in node and waits until a 1 KiB test from node client to
// target succeeds (TCP refuses until the server listens; the test also opens the path's ARP
// entries before anything is measured).
func startIperfServer(ctx context.Context, tb *testbed.Testbed, node, client, target string) error {
	if _, err := tb.Start(testbed.ProcSpec{Name: "iperf3-server", Node: node, Args: []string{"iperf3", "-s", "-p", iperfPort}}); err != nil {
		return fmt.Errorf("start iperf3 server: %w", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		_, err := runIperf(ctx, tb, client, fmt.Sprintf("iperf3-ready%d", i), []string{"-c", target, "-p", iperfPort, "-n", "1K"})
		if err == nil {
			return nil
		}
		if !errors.Is(err, errIperfConnect) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("iperf3 server in %s not answering: %w", node, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runIperf runs an iperf3 client in node with args (plus -J) and parses its report.
func runIperf(ctx context.Context, tb *testbed.Testbed, node, name string, args []string) (*IperfResult, error) {
	var stdout bytes.Buffer
	st, err := runToEnd(ctx, tb, testbed.ProcSpec{Name: name, Node: node, Args: append([]string{"iperf3", "-J"}, args...), Stdout: &stdout})
	if err != nil {
		return nil, err
	}
	r, err := ParseIperf(stdout.Bytes())
	if err != nil {
		if st.ExitCode != 0 && !errors.Is(err, errIperfConnect) {
			return nil, fmt.Errorf("iperf3 exited %d %s: %w", st.ExitCode, st.Signal, err)
		}
		return nil, err
	}
	return r, nil
}
