package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt is a prompt template a server offers, which clients show as the
// slash command /<Command>.
type Prompt struct {
	Server      string
	Name        string // the server's own name for it
	Command     string // mcp__<server>__<prompt>
	Description string
	Arguments   []PromptArgument
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string
	Description string
	Required    bool
}

// Usage is a one-line synopsis: /command <required> [optional].
func (p Prompt) Usage() string {
	parts := []string{"/" + p.Command}
	for _, a := range p.Arguments {
		if a.Required {
			parts = append(parts, "<"+a.Name+">")
		} else {
			parts = append(parts, "["+a.Name+"]")
		}
	}
	return strings.Join(parts, " ")
}

// Prompts returns the prompts of every ready server, after listing again
// those whose list changed.
func (s *Set) Prompts(ctx context.Context) ([]Prompt, error) {
	var out []Prompt
	var errs []error
	for _, srv := range s.servers {
		if err := srv.refresh(ctx); err != nil {
			errs = append(errs, err)
		}
		srv.mu.Lock()
		if srv.cs != nil {
			for _, p := range srv.prompts {
				out = append(out, toPrompt(srv.cfg.Name, p))
			}
		}
		srv.mu.Unlock()
	}
	return out, errors.Join(errs...)
}

func toPrompt(server string, p *sdk.Prompt) Prompt {
	out := Prompt{Server: server, Name: p.Name, Command: ToolName(server, p.Name), Description: oneLine(p.Description)}
	for _, a := range p.Arguments {
		out.Arguments = append(out.Arguments, PromptArgument{Name: a.Name, Description: oneLine(a.Description), Required: a.Required})
	}
	return out
}

// ErrNoPrompt is returned by GetPrompt for a command no server offers.
var ErrNoPrompt = errors.New("no such MCP prompt")

// GetPrompt fills in the prompt that command (mcp__server__prompt, without
// the slash) names and returns its text, ready to send to the model. args
// is what followed the command: either name=value pairs, or values in the
// order of the prompt's arguments (the last one takes the rest of the
// line).
func (s *Set) GetPrompt(ctx context.Context, command, args string) (string, error) {
	prompts, _ := s.Prompts(ctx)
	var p *Prompt
	for i := range prompts {
		if prompts[i].Command == command {
			p = &prompts[i]
		}
	}
	if p == nil {
		return "", fmt.Errorf("%w: /%s (/mcp lists the servers and their prompts)", ErrNoPrompt, command)
	}
	values, err := p.parseArgs(args)
	if err != nil {
		return "", err
	}
	srv := s.server(p.Server)
	cs := srv.session()
	if cs == nil {
		return "", srv.unavailable()
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: p.Name, Arguments: values})
	if err != nil {
		return "", fmt.Errorf("mcp server %q: get prompt %q: %w", p.Server, p.Name, err)
	}
	var parts []string
	for _, m := range res.Messages {
		text := formatContent(m.Content)
		if m.Role == "assistant" {
			text = "(assistant) " + text
		}
		parts = append(parts, text)
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" {
		return "", fmt.Errorf("mcp server %q: prompt %q came back empty", p.Server, p.Name)
	}
	return text, nil
}

func (p Prompt) parseArgs(line string) (map[string]string, error) {
	values := map[string]string{}
	fields := strings.Fields(line)
	named := len(fields) > 0
	for _, f := range fields {
		if k, _, ok := strings.Cut(f, "="); !ok || !p.hasArg(k) {
			named = false
		}
	}
	switch {
	case named:
		for _, f := range fields {
			k, v, _ := strings.Cut(f, "=")
			values[k] = v
		}
	case len(fields) > 0:
		if len(p.Arguments) == 0 {
			return nil, fmt.Errorf("/%s takes no arguments", p.Command)
		}
		rest := strings.TrimSpace(line)
		for i, a := range p.Arguments {
			if rest == "" {
				break
			}
			if i == len(p.Arguments)-1 {
				values[a.Name] = rest
				break
			}
			v, r, _ := strings.Cut(rest, " ")
			values[a.Name], rest = v, strings.TrimSpace(r)
		}
	}
	var missing []string
	for _, a := range p.Arguments {
		if _, ok := values[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("/%s needs %s; usage: %s", p.Command, strings.Join(missing, ", "), p.Usage())
	}
	return values, nil
}

func (p Prompt) hasArg(name string) bool {
	for _, a := range p.Arguments {
		if a.Name == name {
			return true
		}
	}
	return false
}

// GetPromptIn is GetPrompt on the set among sets that holds the prompt's
// server (the first set when none does, for its error). sets must not be
// empty.
func GetPromptIn(ctx context.Context, sets []*Set, command, args string) (string, error) {
	server, _, _ := SplitToolName(command)
	for _, set := range sets {
		if set.server(server) != nil {
			return set.GetPrompt(ctx, command, args)
		}
	}
	return sets[0].GetPrompt(ctx, command, args)
}
