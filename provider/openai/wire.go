package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The HTTP exchange and the stream are read by hand too, with
// encoding/json into the few fields the provider reads (see convert.go for
// why the SDK is not used).

// chunk is one streamed chat.completion.chunk.
type chunk struct {
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage"`
}

// chunkChoice is a choice of a chunk.
type chunkChoice struct {
	Index        int64  `json:"index"`
	Delta        delta  `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

// delta is what a chunk adds to a choice.
type delta struct {
	Content   string          `json:"content"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
	reasoningFields
}

// reasoningFields are the fields servers put reasoning in (see
// reasoning.go), kept raw: a server may send them as something other than
// a string, which is then ignored rather than failing the answer.
type reasoningFields struct {
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

// toolCallDelta is a fragment of a tool call.
type toolCallDelta struct {
	Index    int64            `json:"index"`
	ID       string           `json:"id"`
	Function chatCallFunction `json:"function"`
}

// usage is a response's token counts.
type usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// completion is a whole (non-streamed) chat.completion.
type completion struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string           `json:"id"`
				Function chatCallFunction `json:"function"`
			} `json:"tool_calls"`
			reasoningFields
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

// failure is an error response as it came over the wire.
type failure struct {
	status int
	header http.Header
	body   []byte
}

// streamError is an error chunk inside a 200 stream ({"error": ...}).
type streamError struct {
	data []byte
}

func (e *streamError) Error() string { return "openai: received an error while streaming" }

// send posts c, streamed or not, and returns the response of a 2xx
// answer. An error answer is returned as a *failure (its body read), with
// a nil response.
func (p *Provider) send(ctx context.Context, c call, stream bool) (*http.Response, *failure, error) {
	c.req.Stream = stream
	if !stream {
		c.req.StreamOptions = nil
	}
	b, err := c.body()
	if err != nil {
		return nil, nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("openai: %w", err)
	}
	// The headers the SDK sent, less its own telemetry (X-Stainless-*,
	// User-Agent).
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if p.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	res, err := p.http.Do(hreq)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		_ = res.Body.Close()
		return nil, &failure{status: res.StatusCode, header: res.Header, body: body}, nil
	}
	return res, nil, nil
}

// events reads a server-sent event stream, calling fn with each event's
// data until "[DONE]" or the end of the body; events with empty data are
// skipped. An event whose data has an
// "error" field ends it with a *streamError.
func events(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 32<<20)
	var data []byte
	has := false
	dispatch := func() (bool, error) {
		if !has {
			return false, nil
		}
		d := data
		data, has = data[:0:0], false
		if len(d) == 0 {
			return false, nil // an empty event, as keep-alives are
		}
		if bytes.HasPrefix(d, []byte("[DONE]")) {
			return true, nil
		}
		if hasErrorField(d) {
			return true, &streamError{data: d}
		}
		return false, fn(d)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if done, err := dispatch(); done || err != nil {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) == "data" {
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	_, err := dispatch()
	return err
}

// hasErrorField reports whether an event's data is a JSON object with an
// "error" field, as the SDK checked.
func hasErrorField(d []byte) bool {
	if !bytes.Contains(d, []byte(`"error"`)) {
		return false
	}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(d, &v) == nil && v.Error != nil
}
