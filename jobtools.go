package liteagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
	"github.com/lite-agent/lite-agent/tool/todo"
)

// withSessionTools returns tools with the session's own added: the todo
// tool over the session's task list, unless a tool is named todo; and,
// when a builtin.Bash has no job runner, the session as its runner plus
// job_output and job_stop (unless tools with those names are given).
func (s *Session) withSessionTools(in []tool.Tool) []tool.Tool {
	out := make([]tool.Tool, 0, len(in)+3)
	names := map[string]bool{}
	jobs := false
	for _, t := range in {
		switch b := t.(type) {
		case builtin.Bash:
			if b.Jobs == nil {
				b.Jobs = jobRunner{s}
				t, jobs = b, true
			}
		case *builtin.Bash:
			if b != nil && b.Jobs == nil {
				c := *b
				c.Jobs = jobRunner{s}
				t, jobs = c, true
			}
		}
		names[t.Spec().Name] = true
		out = append(out, t)
	}
	for _, t := range []tool.Tool{todo.Tool{Store: sessionTasks{s}}, jobOutputTool{s}, jobStopTool{s}} {
		name := t.Spec().Name
		if names[name] || (!jobs && name != "todo") {
			continue
		}
		out = append(out, t)
	}
	if s.a.opts.Input != nil && !names[AskUserTool] {
		out = append(out, askUser{s})
	}
	return out
}

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

// jobFor looks up a job of the session for the model.
func (s *Session) jobFor(id string) (*job, tool.Result, bool) {
	sid := s.id
	if id == "" {
		return nil, tool.Errorf("job_id is required, such as \"j1\"; call job_output without it to list the jobs"), false
	}
	j := s.a.jobs.find(sid, id)
	if j == nil {
		return nil, tool.Errorf("there is no background job %q in this session; call job_output without a job_id to list the jobs", id), false
	}
	return j, tool.Result{}, true
}

const (
	jobOutputDefault = 8 << 10
	jobOutputMax     = 32 << 10
)

// jobOutputTool shows a background job's output so far.
type jobOutputTool struct{ s *Session }

func (jobOutputTool) Spec() tool.Spec {
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

func (t jobOutputTool) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseJobInput(call.Input)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	if in.JobID == "" {
		return tool.Result{Output: t.s.listJobs()}
	}
	j, res, ok := t.s.jobFor(in.JobID)
	if !ok {
		return res
	}
	n := in.MaxBytes
	switch {
	case n <= 0:
		n = jobOutputDefault
	case n > jobOutputMax:
		n = jobOutputMax
	}
	st := j.proc.State()
	if !st.Running {
		t.s.a.jobs.markSeen(j)
	}
	return tool.Result{Output: describeJob(j, st, n)}
}

// listJobs lists the session's jobs for the model.
func (s *Session) listJobs() string {
	js := s.a.jobs.ofSession(s.id)
	if len(js) == 0 {
		return "No background jobs in this session."
	}
	var b strings.Builder
	for _, j := range js {
		fmt.Fprintf(&b, "%s: %s: %s\n", j.id, outcome(j.proc.State()), short(j.command, 100))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// describeJob shows a job's state and the last n bytes of its output.
func describeJob(j *job, st builtin.JobState, n int) string {
	out, total := j.proc.Output(n)
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s (%s) ", j.id, j.command)
	if st.Running {
		fmt.Fprintf(&b, "is running, for %s so far.\n", time.Since(j.proc.Started()).Round(time.Second))
	} else {
		fmt.Fprintf(&b, "finished: %s.\n", outcome(st))
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

// jobStopTool stops a background job.
type jobStopTool struct{ s *Session }

func (jobStopTool) Spec() tool.Spec {
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

func (t jobStopTool) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseJobInput(call.Input)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	j, res, ok := t.s.jobFor(in.JobID)
	if !ok {
		return res
	}
	t.s.a.jobs.markSeen(j)
	j.proc.Stop("stopped with job_stop")
	select {
	case <-j.proc.Done():
	case <-ctx.Done():
		return tool.Errorf("cancelled while job %s was stopping; it is being stopped", j.id)
	}
	return tool.Result{Output: describeJob(j, j.proc.State(), jobOutputDefault)}
}
