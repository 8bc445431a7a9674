package liteagent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// DeniedError is what an ApprovalFunc returns, with Deny, to refuse a call
// and tell the model why: the call is denied (the turn goes on) and Reason
// is part of what the model reads.
type DeniedError struct{ Reason string }

func (e *DeniedError) Error() string { return "denied: " + e.Reason }

// Sandboxed is implemented by tools that run commands in a sandbox; the
// mode is recorded with each call in its tool_started event.
type Sandboxed interface {
	SandboxMode() string
}

// PermissionRequest is the call as the permission engine sees it, for a
// client that offers to allow it by a rule (see permission.Suggest).
func (r ApprovalRequest) PermissionRequest() permission.Request {
	req := permission.Request{Tool: r.Tool, Kind: string(r.Kind), Paths: r.Paths}
	in := argsOf(r.Input)
	switch r.Kind {
	case tool.KindExec:
		req.Command = in.Command
	case tool.KindNetwork:
		req.URL = in.URL
	}
	return req
}

// ruleArgs are the fields of a tool's input that rules match.
type ruleArgs struct {
	Command string `json:"command"` // a shell tool's
	Path    string `json:"path"`    // a file tool's
	URL     string `json:"url"`     // a network tool's
}

// argsOf returns the fields of input that rules match; a bad input has
// none, and so matches no argument pattern.
func argsOf(input json.RawMessage) ruleArgs {
	var in ruleArgs
	_ = json.Unmarshal(input, &in)
	in.URL = strings.TrimSpace(in.URL)
	return in
}

// ruleRequest describes a call to the permission engine: the command of
// a shell tool, the paths of a file tool (those it changes, or the path
// its input names).
func (s *Session) ruleRequest(c call, spec tool.Spec, paths []string) permission.Request {
	req := permission.Request{Tool: c.name, Kind: string(spec.Kind), Paths: paths}
	in := argsOf(c.input)
	switch spec.Kind {
	case tool.KindExec:
		req.Command = in.Command
	case tool.KindNetwork:
		req.URL = in.URL
		return req
	}
	if len(paths) == 0 && spec.Kind != tool.KindExec {
		p := in.Path
		if p == "" {
			p = "."
		}
		if rel, err := s.root.Rel(p); err == nil {
			req.Paths = []string{rel}
		}
	}
	return req
}

// decideByRule asks the permission engine about the call and records a
// decision it takes in the log. It returns the effect (permission.None when
// no rule matched) and, for a deny, what the model is told.
//
// The decision is held for the call's next append (held.go), not written
// on its own: an allow is followed by the intent's append, a deny by the
// receipt's, an ask by the append made before a person is asked, and
// nothing outside the log happens in between.
func (s *Session) decideByRule(c call, spec tool.Spec, paths []string) (permission.Effect, string) {
	if s.a.opts.Permissions == nil {
		return permission.None, ""
	}
	d := s.a.opts.Permissions.Decide(s.ruleRequest(c, spec, paths))
	if d.Effect == permission.None {
		return permission.None, ""
	}
	ev := session.PermissionDecided{CallID: c.id, Tool: c.name, Effect: string(d.Effect), Rule: d.Rule.Name(), Source: d.Rule.Source, Reason: d.Rule.Reason}
	s.hold(mustEvent(session.TypePermissionDecided, ev))
	return d.Effect, deniedText(fmt.Sprintf("A permission rule denied this call: %s.", d.Reason()))
}

// deniedText is what the model reads for a denied call.
func deniedText(why string) string {
	return why + " It was not run. Do not retry it; ask the user or take another approach."
}
