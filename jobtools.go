package liteagent

import (
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
	"github.com/lite-agent/lite-agent/tool/todo"
)

// withSessionTools returns tools with the session's own added: the todo
// tool over the session's task list, unless a tool is named todo; and,
// when a tool can run background jobs (builtin.JobTool) and has no starter
// of its own, the session's job starter given to it, plus job_output and
// job_stop (unless tools with those names are given).
func (s *Session) withSessionTools(in []tool.Tool) []tool.Tool {
	out := make([]tool.Tool, 0, len(in)+3)
	names := map[string]bool{}
	starter := s.a.jobs.For(jobOwner{s})
	runsJobs := false
	for _, t := range in {
		if jt, ok := t.(builtin.JobTool); ok {
			if bound, ok := jt.WithJobs(starter); ok {
				t, runsJobs = bound, true
			}
		}
		names[t.Spec().Name] = true
		out = append(out, t)
	}
	own := []tool.Tool{todo.Tool{Store: sessionTasks{s}}}
	if runsJobs {
		own = append(own, starter.Tools()...)
	}
	for _, t := range own {
		if name := t.Spec().Name; !names[name] {
			out = append(out, t)
		}
	}
	if s.a.opts.Input != nil && !names[AskUserTool] {
		out = append(out, askUser{s})
	}
	return out
}
