package liteagent

import (
	"fmt"
	"reflect"

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

// checkTools refuses what New cannot make a tool of: a nil entry (a nil
// interface, or a nil pointer such as a (*builtin.Bash)(nil), whose methods
// would panic mid-turn or when the session hands it its job starter), and
// a tool without a name.
func checkTools(tools []tool.Tool) error {
	for i, t := range tools {
		if t == nil {
			return fmt.Errorf("Options.Tools[%d] is nil: give a tool, or leave Tools nil for the built-in tools", i)
		}
		if v := reflect.ValueOf(t); v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("Options.Tools[%d] is a nil %T: give a tool value (such as builtin.Bash{}), not a nil pointer", i, t)
		}
		if t.Spec().Name == "" {
			return fmt.Errorf("Options.Tools[%d] (%T) has no name: its Spec must name it", i, t)
		}
	}
	return nil
}
