package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/session"
)

// sessionJSON is one session as --sessions prints it.
type sessionJSON struct {
	ID       string           `json:"id"`
	Revision int64            `json:"revision"`
	Messages int              `json:"messages"`
	Status   session.Status   `json:"status"`
	Title    string           `json:"title,omitempty"`
	Created  time.Time        `json:"created"`
	Updated  time.Time        `json:"updated"`
	Hazards  int              `json:"hazards"`
	Parent   *session.ForkRef `json:"parent,omitempty"`
	// Imported says where an imported session's log came from.
	Imported *session.Import `json:"imported,omitempty"`
}

// writeSessions prints sessions as a JSON array, one object per line. It
// is written by hand because listings can hold tens of thousands of
// sessions and reflection-based encoding dominated the command's time;
// TestWriteSessionsMatchesEncodingJSON pins it to encoding/json.
func writeSessions(w io.Writer, list []session.Summary) error {
	buf := make([]byte, 0, 512)
	var tw timeWriter
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for i, s := range list {
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, "\n  "...)
		buf = appendSession(buf, s, &tw)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	if len(list) > 0 {
		_, err := io.WriteString(w, "\n]\n")
		return err
	}
	_, err := io.WriteString(w, "]\n")
	return err
}

// appendSession appends the compact JSON of one session as sessionJSON
// encodes it, its times through tw.
func appendSession(b []byte, s session.Summary, tw *timeWriter) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, s.ID)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, s.Head, 10)
	b = append(b, `,"messages":`...)
	b = strconv.AppendInt(b, int64(s.Messages), 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(s.Status))
	if s.Title != "" {
		b = append(b, `,"title":`...)
		b = appendJSONString(b, s.Title)
	}
	b = append(b, `,"created":"`...)
	b = tw.append(b, s.Created)
	b = append(b, `","updated":"`...)
	b = tw.append(b, s.Updated)
	b = append(b, `","hazards":`...)
	b = strconv.AppendInt(b, int64(s.Hazards()), 10)
	if s.Parent != nil {
		b = append(b, `,"parent":{"session":`...)
		b = appendJSONString(b, s.Parent.Session)
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, s.Parent.Seq, 10)
		b = append(b, '}')
	}
	if s.Imported != nil { // rare: reflection is cheap enough here
		m, _ := json.Marshal(s.Imported)
		b = append(b, `,"imported":`...)
		b = append(b, m...)
	}
	return append(b, '}')
}

// timeWriter writes times as encoding/json does (RFC 3339 with the
// nanoseconds' trailing zeros cut), remembering the last day it wrote: a
// listing's times fall on few days, and working out the date is most of
// what time.Time.AppendFormat costs (BenchmarkWriteSessions10k: 3.9-4.3
// ms with AppendFormat, 2.8-3.6 ms with this). Times in another zone than
// UTC, or outside years 1 to 9999, go through AppendFormat.
type timeWriter struct {
	day  int64    // days since 1970-01-01 of date, when set
	date [10]byte // YYYY-MM-DD
	set  bool
}

func (tw *timeWriter) append(b []byte, t time.Time) []byte {
	if t.Location() != time.UTC || t.Year() < 1 || t.Year() > 9999 {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	sec := t.Unix()
	day := sec / 86400
	if sec%86400 < 0 {
		day--
	}
	if !tw.set || day != tw.day {
		y, m, d := t.Date()
		tw.date = [10]byte{byte('0' + y/1000), byte('0' + y/100%10), byte('0' + y/10%10), byte('0' + y%10), '-',
			byte('0' + m/10), byte('0' + m%10), '-', byte('0' + d/10), byte('0' + d%10)}
		tw.day, tw.set = day, true
	}
	b = append(b, tw.date[:]...)
	s := sec - day*86400
	b = append(b, 'T', byte('0'+s/36000), byte('0'+s/3600%10), ':', byte('0'+s%3600/600), byte('0'+s%3600/60%10), ':', byte('0'+s%60/10), byte('0'+s%10))
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// appendJSONString appends s as a JSON string: plain printable ASCII as it
// is, anything else through encoding/json so escaping matches it exactly.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// inspect runs fn with an agent on a read-only store: no model, no tools,
// nothing written.
func inspect(ctx context.Context, c *config, fn func(e *env) error) error {
	e, err := newAgent(ctx, c, "", true, false)
	if err != nil {
		return err
	}
	defer e.close()
	return fn(e)
}

func listSessions(ctx context.Context, c *config, std IO) error {
	return inspect(ctx, c, func(e *env) error {
		a := e.agent
		list, err := a.ListSessions(ctx)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(std.Stdout, 64*1024)
		if err := writeSessions(w, list); err != nil {
			return err
		}
		return w.Flush()
	})
}

// infoJSON is what --session-info prints.
type infoJSON struct {
	ID        string           `json:"id"`
	Revision  int64            `json:"revision"`
	Messages  int              `json:"messages"`
	Workspace string           `json:"workspace"`
	Workdir   string           `json:"workdir,omitempty"`
	Model     string           `json:"model,omitempty"`
	Status    session.Status   `json:"status"`
	Title     string           `json:"title,omitempty"`
	Created   time.Time        `json:"created"`
	Updated   time.Time        `json:"updated"`
	Parent    *session.ForkRef `json:"parent,omitempty"`
	// Imported says where the log came from when it was imported (an
	// export of another store or machine), nil for one written here.
	Imported *session.Import `json:"imported,omitempty"`
	Usage    session.Usage   `json:"usage"`
	// Spend is the context share and estimated cost, with Spend.Line
	// the summary the status line shows.
	Spend       liteagent.Spend  `json:"spend"`
	Checkpoints []checkpointJSON `json:"checkpoints"`
	Hazards     []hazardJSON     `json:"hazards"`
	// Running is the process running a turn in the session now, whose
	// open calls (Live) are running, not interrupted.
	Running *checkpoint.Holder `json:"running,omitempty"`
	Live    []hazardJSON       `json:"live,omitempty"`
	// TaskList names the shared task list shown (--task-list); "" for the
	// session's private list.
	TaskList string         `json:"task_list,omitempty"`
	Tasks    []session.Task `json:"tasks"`
	// InstructionFiles are the AGENTS.md / CLAUDE.md files the session's
	// system prompt was built from.
	InstructionFiles []session.ContextFile `json:"instruction_files"`
}

type checkpointJSON struct {
	Seq    int64     `json:"seq"`
	Prompt string    `json:"prompt"`
	Time   time.Time `json:"time"`
}

// hazardJSON is an interrupted tool call for review. It never carries the
// transcript or the tool's output.
type hazardJSON struct {
	Token   string    `json:"token"`
	Tool    string    `json:"tool"`
	CallID  string    `json:"call_id"`
	Started time.Time `json:"started"`
	Paths   []string  `json:"paths"`
	// MCPServer and MCPTool name the server and its tool when the call
	// was an MCP tool's (mcp__server__tool).
	MCPServer string `json:"mcp_server,omitempty"`
	MCPTool   string `json:"mcp_tool,omitempty"`
}

func toCheckpoints(cps []session.Checkpoint) []checkpointJSON {
	out := make([]checkpointJSON, 0, len(cps))
	for _, c := range cps {
		out = append(out, checkpointJSON{Seq: c.Seq, Prompt: c.Prompt, Time: c.Time})
	}
	return out
}

func toHazards(hz []session.Hazard) []hazardJSON {
	out := make([]hazardJSON, 0, len(hz))
	for _, h := range hz {
		paths := h.Paths
		if paths == nil {
			paths = []string{}
		}
		server, name, _ := mcp.SplitToolName(h.Tool)
		out = append(out, hazardJSON{Token: h.Token, Tool: h.Tool, CallID: h.CallID, Started: h.Started, Paths: paths, MCPServer: server, MCPTool: name})
	}
	return out
}

func sessionInfo(ctx context.Context, c *config, std IO) error {
	return inspect(ctx, c, func(e *env) error {
		a := e.agent
		id, err := a.FindSession(ctx, c.sessionInfo)
		if err != nil {
			return err
		}
		info, err := a.SessionInfo(ctx, id)
		if err != nil {
			return err
		}
		tasks, err := a.Tasks(ctx, id)
		if err != nil {
			return err
		}
		return writeJSON(std.Stdout, infoJSON{
			ID: info.ID, Revision: info.Head, Messages: info.Messages, Workspace: info.Namespace, Workdir: info.Workdir,
			Model: info.Model, Status: info.Status, Title: info.Title, Created: info.Created, Updated: info.Updated,
			Parent: info.Parent, Imported: info.Imported, Usage: info.Usage, Spend: info.Spend, Checkpoints: toCheckpoints(info.Checkpoints), Hazards: toHazards(info.Hazards),
			Running: info.Running, Live: liveCalls(info.Live), TaskList: tasks.Name, Tasks: tasks.Tasks, InstructionFiles: nonNil(info.InstructionFiles),
		})
	})
}

func recoveryInfo(ctx context.Context, c *config, std IO) error {
	return inspect(ctx, c, func(e *env) error {
		a := e.agent
		id, err := a.FindSession(ctx, c.recoveryInfo)
		if err != nil {
			return err
		}
		info, err := a.SessionInfo(ctx, id)
		if err != nil {
			return err
		}
		out := struct {
			Session string       `json:"session"`
			Status  string       `json:"status"`
			Hazards []hazardJSON `json:"hazards"`
			Next    string       `json:"next"`
		}{Session: id, Status: string(info.Status), Hazards: toHazards(info.Hazards)}
		if info.Running != nil {
			out.Status = "running"
			out.Next = "the session is running now in " + info.Running.String() + ": its open calls are running, not interrupted; there is nothing to acknowledge"
		} else if len(info.Hazards) == 0 {
			out.Next = "nothing to review: the session can be resumed"
		} else {
			out.Next = "check what each tool actually did (the files listed), then continue with: lite-agent --session-db " + c.sessionDB + " --resume " + id
			for _, h := range info.Hazards {
				out.Next += " --acknowledge " + h.Token
			}
		}
		return writeJSON(std.Stdout, out)
	})
}

func listCheckpoints(ctx context.Context, c *config, std IO) error {
	return inspect(ctx, c, func(e *env) error {
		a := e.agent
		id, err := a.FindSession(ctx, c.checkpoints)
		if err != nil {
			return err
		}
		cps, err := a.ListCheckpoints(ctx, id)
		if err != nil {
			return err
		}
		return writeJSON(std.Stdout, toCheckpoints(cps))
	})
}

func exportSession(ctx context.Context, c *config, std IO) error {
	return inspect(ctx, c, func(e *env) error {
		a := e.agent
		id, err := a.FindSession(ctx, c.export)
		if err != nil {
			return err
		}
		if c.salvage {
			return salvageSession(ctx, c, e, id, std)
		}
		return jsonl.Export(ctx, e.store, id, std.Stdout)
	})
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
