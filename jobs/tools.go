package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/tool"
)

// jobInput is the input of job_output and job_stop.
type jobInput struct {
	JobID    string `json:"job_id"`
	MaxBytes int    `json:"max_bytes"`
}

func parseJobInput(raw json.RawMessage) (jobInput, error) {
	var in struct {
		JobID    json.RawMessage `json:"job_id"`
		MaxBytes json.RawMessage `json:"max_bytes"`
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return jobInput{}, nil
	}
	if err := json.Unmarshal(trimmed, &in); err != nil {
		return jobInput{}, fmt.Errorf("invalid input: %v; send {\"job_id\": \"j1\"}", err)
	}
	var out jobInput
	// Models send ids and numbers as strings or numbers; take both.
	for _, f := range []struct {
		raw json.RawMessage
		set func(string) error
	}{
		{in.JobID, func(s string) error { out.JobID = strings.TrimSpace(s); return nil }},
		{in.MaxBytes, func(s string) error {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("invalid input: max_bytes must be a whole number, not %s", s)
			}
			out.MaxBytes = n
			return nil
		}},
	} {
		v := bytes.TrimSpace(f.raw)
		if len(v) == 0 || string(v) == "null" {
			continue
		}
		s := string(v)
		if v[0] == '"' {
			if err := json.Unmarshal(v, &s); err != nil {
				return jobInput{}, err
			}
		}
		if err := f.set(s); err != nil {
			return jobInput{}, err
		}
	}
	// "1" means j1.
	if _, err := strconv.Atoi(out.JobID); err == nil {
		out.JobID = "j" + out.JobID
	}
	return out, nil
}

// jobFor looks up a job of the owner's session for the model.
func (s *Starter) jobFor(id string) (*Job, tool.Result, bool) {
	if id == "" {
		return nil, tool.Errorf("job_id is required, such as \"j1\"; call job_output without it to list the jobs"), false
	}
	j := s.t.Find(s.owner.SessionID(), id)
	if j == nil {
		return nil, tool.Errorf("there is no background job %q in this session; call job_output without a job_id to list the jobs", id), false
	}
	return j, tool.Result{}, true
}

const (
	outputDefault = 8 << 10
	outputMax     = 32 << 10
)

// outputTool shows a background job's output so far.
type outputTool struct{ s *Starter }

func (outputTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "job_output",
		Description: "Show a background job's state and the end of its output so far (jobs are started with bash and background: true). " +
			"Without job_id, list this session's background jobs. You are told when a job finishes, so there is no need to poll; use this to check progress or read more output.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "job_id": {"type": "string", "description": "The job's id, such as j1."},
    "max_bytes": {"type": "integer", "minimum": 1, "maximum": 32768, "description": "How many bytes of the end of the output to show; default 8192."}
  },
  "additionalProperties": false
}`),
		Kind: tool.KindRead,
	}
}

func (t outputTool) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseJobInput(call.Input)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	if in.JobID == "" {
		return tool.Result{Output: t.s.list()}
	}
	j, res, ok := t.s.jobFor(in.JobID)
	if !ok {
		return res
	}
	n := in.MaxBytes
	switch {
	case n <= 0:
		n = outputDefault
	case n > outputMax:
		n = outputMax
	}
	st := j.State()
	if !st.Running {
		t.s.t.Seen(j)
	}
	return tool.Result{Output: describe(j, st, n)}
}

// list lists the session's jobs for the model.
func (s *Starter) list() string {
	js := s.t.OfSession(s.owner.SessionID())
	if len(js) == 0 {
		return "No background jobs in this session."
	}
	var b strings.Builder
	for _, j := range js {
		fmt.Fprintf(&b, "%s: %s: %s\n", j.id, Outcome(j.State()), Short(j.command, 100))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// describe shows a job's state and the last n bytes of its output.
func describe(j *Job, st State, n int) string {
	out, total := j.Output(n)
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s (%s) ", j.id, j.command)
	if st.Running {
		fmt.Fprintf(&b, "is running, for %s so far.\n", time.Since(j.started).Round(time.Second))
	} else {
		fmt.Fprintf(&b, "finished: %s.\n", Outcome(st))
	}
	switch {
	case total == 0:
		b.WriteString("(no output yet)")
	case total > int64(len(out)):
		fmt.Fprintf(&b, "[the last %d of %d bytes of output]\n%s", len(out), total, out)
	default:
		b.WriteString(out)
	}
	return b.String()
}

// stopTool stops a background job.
type stopTool struct{ s *Starter }

func (stopTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "job_stop",
		Description: "Stop a background job (started with bash and background: true) and every process it started: they get SIGTERM, then SIGKILL if they do not exit. " +
			"Returns how the job ended and the end of its output. Use it for servers and watchers you no longer need, or a job that hangs.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "job_id": {"type": "string", "description": "The job's id, such as j1."}
  },
  "required": ["job_id"],
  "additionalProperties": false
}`),
		// It only stops a process the model itself started.
		Kind: tool.KindRead,
	}
}

func (t stopTool) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseJobInput(call.Input)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	j, res, ok := t.s.jobFor(in.JobID)
	if !ok {
		return res
	}
	t.s.t.Seen(j)
	j.Stop("stopped with job_stop")
	select {
	case <-j.Done():
	case <-ctx.Done():
		return tool.Errorf("cancelled while job %s was stopping; it is being stopped", j.id)
	}
	return tool.Result{Output: describe(j, j.State(), outputDefault)}
}

// NoticeTail is how much of a job's output the notice of its end carries
// (its job_finished event, the completion prompt): the end.
const NoticeTail = 4 << 10

// CompletionPrompt is the background prompt that tells the model that js
// ended, with the end of their output and the user's goal.
func CompletionPrompt(js []*Job) string {
	var b strings.Builder
	b.WriteString("[Background job update from the agent, not a message from the user]\n")
	goal := ""
	for _, j := range js {
		st := j.State()
		out, total := j.Output(NoticeTail)
		fmt.Fprintf(&b, "\nBackground job %s finished: %s.\nCommand: %s\n", j.id, Outcome(st), j.command)
		switch {
		case total == 0:
			b.WriteString("Output: (none)\n")
		case total > int64(len(out)):
			fmt.Fprintf(&b, "Output (the last %d of %d bytes):\n%s\n", len(out), total, strings.TrimSuffix(out, "\n"))
		default:
			fmt.Fprintf(&b, "Output:\n%s\n", strings.TrimSuffix(out, "\n"))
		}
		if j.goal != "" {
			goal = j.goal
		}
	}
	if goal != "" {
		fmt.Fprintf(&b, "\nThe user's goal, from the prompt that started this work:\n%s\n", goal)
	}
	b.WriteString("\nIf this result calls for more work toward the goal, go on with it; otherwise report the outcome to the user briefly.")
	return b.String()
}

// Short returns s on one line, cut to n runes.
func Short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
