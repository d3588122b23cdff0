package flcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/fl/orchestrator"
	"github.com/continuum-project/continuum/internal/httpauth"
)

// TrainFlags are `continuum fl train`'s flags; the fl-job kind renders its command line from the
// same struct.
type TrainFlags struct {
	Orchestrator string
	Out          string
	Duration     time.Duration
	// TokenFile holds the orchestrator's API token (its --token-file).
	TokenFile string
	JobFlags
}

// DefaultTrainFlags are `fl train`'s defaults.
func DefaultTrainFlags() TrainFlags {
	return TrainFlags{Orchestrator: "http://127.0.0.1:7070", TokenFile: TokenFile(DefaultOrchestrateFlags().Out), JobFlags: DefaultJobFlags()}
}

// Bind declares the flags on fs.
func (f *TrainFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Orchestrator, "orchestrator", f.Orchestrator, "the orchestrator's URL")
	fs.StringVar(&f.Out, "out", f.Out, "write the job's final status here as job.json")
	fs.StringVar(&f.TokenFile, "token-file", f.TokenFile, "file holding the orchestrator's API token (its OUT/secrets/api-token)")
	fs.DurationVar(&f.Duration, "duration", f.Duration, "stop the job after this long if it has not ended (0: wait for it)")
	f.JobFlags.Bind(fs)
}

func newTrainCmd() *cobra.Command {
	flags := DefaultTrainFlags()
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Submit a training job to the FL orchestrator and follow it to its end",
		Long: `Submits the job the flags describe (the training and cost configuration) to a running orchestrator
(` + "`continuum fl orchestrate`" + `), prints a line per global round (accuracy, loss, communication spent) and
every reconfiguration, and exits when the job ends: 0 when it reached its target (accuracy, rounds or
communication spent), 1 when it failed. With --duration it stops the job at that time.`,
		Example: `  continuum fl train --orchestrator http://n0:7070 --strategy min-kld --budget 600 --model-mb 10 --rounds 30
  continuum fl train --strategy centralized --target-accuracy 0.9 --rounds 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrain(cmd.Context(), flags, cmd.OutOrStdout()) },
	}
	flags.Bind(cmd.Flags())
	return cmd
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

func runTrain(ctx context.Context, f TrainFlags, w io.Writer) error {
	if err := f.Job.Validate(); err != nil {
		return err
	}
	base := strings.TrimSuffix(f.Orchestrator, "/")
	tok, err := httpauth.ReadToken(f.TokenFile)
	if err != nil {
		return fmt.Errorf("--token-file: the orchestrator's API token (its OUT/secrets/api-token, or its --token-file): %w", err)
	}

	body, _ := json.Marshal(f.Job)
	var st orchestrator.Status
	// The orchestrator may still be starting (a scenario starts both at once): a few seconds of
	// retries, said on the first failure, then an error naming the address.
	deadline := time.Now().Add(10 * time.Second)
	for tries := 0; ; tries++ {
		code, err := call(ctx, tok, "POST", base+"/jobs", body, &st)
		if err == nil && code == 202 {
			break
		}
		if err == nil {
			return fmt.Errorf("orchestrator %s refused the job: %s", base, st.Reason)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("orchestrator %s: %w (is `continuum fl orchestrate` running there?)", base, err)
		}
		if tries == 0 {
			fmt.Fprintf(w, "orchestrator %s does not answer yet (%v): retrying for 10 s\n", base, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintf(w, "job submitted to %s: %s\n", base, describeJob(f.Job))
	var stopAt <-chan time.Time
	if f.Duration > 0 {
		t := time.NewTimer(f.Duration)
		defer t.Stop()
		stopAt = t.C
	}
	lastRound, lastReconf := -1, 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	stopping := false
	for {
		select {
		case <-ctx.Done():
			if !stopping {
				_, _ = call(context.Background(), tok, "POST", base+"/jobs/current/stop", []byte(`{"reason":"fl train was interrupted"}`), &st)
				stopping = true
			}
		case <-stopAt:
			fmt.Fprintf(w, "duration %v reached: stopping the job\n", f.Duration)
			_, _ = call(ctx, tok, "POST", base+"/jobs/current/stop", []byte(fmt.Sprintf(`{"reason":"the job's duration %v ended"}`, f.Duration)), &st)
			stopping = true
		case <-tick.C:
		}
		if _, err := call(context.Background(), tok, "GET", base+"/jobs/current", nil, &st); err != nil {
			if stopping && ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if st.Round != lastRound {
			lastRound = st.Round
			fmt.Fprintln(w, roundLine(st.Round, st.Accuracy, st.Loss, st.Spent))
		}
		for ; lastReconf < len(st.Reconfigurations); lastReconf++ {
			r := st.Reconfigurations[lastReconf]
			fmt.Fprintf(w, "%s%s in %.2f s: %s\n", reconfiguredPrefix, r.Cause, r.ApplyS, r.Decision)
		}
		if st.State == "done" || st.State == "failed" {
			break
		}
	}
	if f.Out != "" {
		if err := os.MkdirAll(f.Out, 0o755); err == nil {
			b, _ := json.MarshalIndent(st, "", "  ")
			_ = os.WriteFile(filepath.Join(f.Out, JobFile), b, 0o644)
		}
	}
	fmt.Fprintf(w, "job %s: %s (round %d, accuracy %s)\n", st.State, st.Reason, st.Round, fmtAcc(st.Accuracy))
	if st.State == "failed" {
		return errors.New("job failed: " + st.Reason)
	}
	return nil
}

// JobFile is the job's final status (orchestrator.Status) that `fl train --out DIR` writes.
const JobFile = "job.json"

// roundLine is `fl train`'s line per global round; ReadTrainLine reads it back for the fl-job
// kind's progress, so the two live side by side.
func roundLine(round int, acc, loss *float64, spent float64) string {
	return fmt.Sprintf("round %d: accuracy %s, loss %s, cost spent %.0f", round, fmtAcc(acc), fmtAcc(loss), spent)
}

const reconfiguredPrefix = "reconfigured after "

var roundLineRE = regexp.MustCompile(`^round (\d+): accuracy (\S+), loss (\S+), cost spent (\d+)$`)

// TrainLine is what a line of `fl train`'s output says about the job's progress.
type TrainLine struct {
	// Round is set (>= 0) on a round's line, with Accuracy as printed ("0.8431", "-" before
	// the first evaluation) and Spent, the communication cost spent so far.
	Round    int
	Accuracy string
	Spent    float64
	// Reconfigured is set on a reconfiguration's line.
	Reconfigured bool
}

// ReadTrainLine reads one line of `fl train`'s output; ok is false for lines that say nothing
// of the job's progress.
func ReadTrainLine(line string) (tl TrainLine, ok bool) {
	if strings.HasPrefix(line, reconfiguredPrefix) {
		return TrainLine{Round: -1, Reconfigured: true}, true
	}
	m := roundLineRE.FindStringSubmatch(line)
	if m == nil {
		return TrainLine{}, false
	}
	round, err1 := strconv.Atoi(m[1])
	spent, err2 := strconv.ParseFloat(m[4], 64)
	if err1 != nil || err2 != nil {
		return TrainLine{}, false
	}
	return TrainLine{Round: round, Accuracy: m[2], Spent: spent}, true
}

func describeJob(j orchestrator.JobSpec) string {
	return fmt.Sprintf("%s, budget %g per epoch, model %g MB, %d rounds, %s", j.Strategy, j.Budget, j.ModelMB, j.Rounds, j.Dataset)
}

// call does one API request and decodes the JSON answer into out (an error object's "error"
// into out's Reason when out is a Status).
func call(ctx context.Context, token, method, url string, body []byte, out *orchestrator.Status) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := apiClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		out.Reason = e.Error
		if out.Reason == "" {
			out.Reason = resp.Status
		}
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.Unmarshal(b, out)
}
