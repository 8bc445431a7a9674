package liteagent

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

// InputRequest is a question the model asks the user.
type InputRequest struct {
	Session  string
	CallID   string
	Question string
	// Choices are suggested answers, if the model gave any.
	Choices []string
	// Background marks a question from a background completion turn,
	// which starts by itself while the user may be doing something else.
	Background bool
}

// InputFunc answers the model's questions (the ask_user tool, offered only
// when Options.Input is set). It must return when ctx is done (the turn was
// cancelled or the agent closed), dismissing any prompt; its error is
// shown to the model as a tool error.
type InputFunc func(ctx context.Context, req InputRequest) (string, error)

// AskUserTool is the name of the tool that asks the user a question.
const AskUserTool = "ask_user"

const askUserSchema = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "description": "The question, in one or two sentences."},
    "choices": {"type": "array", "items": {"type": "string"}, "description": "Suggested answers, if there are a few obvious ones."}
  },
  "required": ["question"],
  "additionalProperties": false
}`

// askUser is the ask_user tool of a session: it hands the question to
// Options.Input.
type askUser struct{ s *Session }

func (t askUser) Spec() tool.Spec {
	return tool.Spec{
		Name: AskUserTool,
		Description: "Ask the user a question and wait for the answer. Use it only when you cannot go on without the user's decision " +
			"(an ambiguous request, a choice between approaches with real trade-offs, missing information you cannot find in the workdir); " +
			"do not ask for permission to use tools, and prefer finding answers in the code yourself.",
		InputSchema: json.RawMessage(askUserSchema),
		Kind:        tool.KindRead,
	}
}

func (t askUser) Run(ctx context.Context, c tool.Call) tool.Result {
	var in struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	if err := json.Unmarshal(c.Input, &in); err != nil || strings.TrimSpace(in.Question) == "" {
		return tool.Errorf("ask_user needs {\"question\": \"...\"}: the question to show the user")
	}
	t.s.mu.Lock()
	background := t.s.inBackground
	t.s.mu.Unlock()
	answer, err := t.s.a.opts.Input(ctx, InputRequest{Session: t.s.id, CallID: c.ID, Question: in.Question, Choices: in.Choices, Background: background})
	if ctx.Err() != nil {
		return tool.Errorf("the question was dismissed: the turn was cancelled")
	}
	if err != nil {
		return tool.Errorf("the user could not be asked: %v", err)
	}
	if strings.TrimSpace(answer) == "" {
		return tool.Result{Output: "(the user gave no answer)"}
	}
	return tool.Result{Output: answer}
}
