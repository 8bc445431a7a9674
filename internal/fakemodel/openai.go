package fakemodel

// The OpenAI Chat Completions streaming format: server-sent events with
// only "data:" lines, each a chat.completion.chunk object, ended by
// "data: [DONE]".

// openAIFrames builds the chunks of a streamed completion.
func openAIFrames(p *plan) []frame {
	var fs []frame
	chunk := func(kind int, choices []any) {
		c := map[string]any{
			"id":                 p.messageID,
			"object":             "chat.completion.chunk",
			"created":            p.created,
			"model":              p.model,
			"system_fingerprint": "fp_fakemodel",
			"choices":            choices,
		}
		if p.view.includeUsage && !p.reply.OmitUsage {
			c["usage"] = nil
		}
		fs = append(fs, frame{kind: kind, data: sse("", c)})
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	}
	chunk(frameHead, choice(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	if p.reply.NoStreamToolCalls {
		// A server that cannot stream tool calls: an empty stream.
		chunk(frameDelta, choice(map[string]any{}, nil))
		chunk(frameTail, choice(map[string]any{}, "stop"))
		fs = append(fs, frame{kind: frameTail, data: []byte("data: [DONE]\n\n")})
		return fs
	}
	for _, piece := range split(p.thinking, p.chunk) {
		chunk(frameDelta, choice(map[string]any{"content": nil, "reasoning_content": piece}, nil))
	}
	for _, piece := range split(p.reply.Text, p.chunk) {
		chunk(frameDelta, choice(map[string]any{"content": piece}, nil))
	}
	for i, tc := range p.reply.ToolCalls {
		first := map[string]any{
			"index":    i,
			"type":     "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}
		if !p.reply.OmitToolIDs {
			first["id"] = p.toolIDs[i]
		}
		chunk(frameDelta, choice(map[string]any{"tool_calls": []any{first}}, nil))
		for _, piece := range split(p.inputs[i], p.chunk) {
			frag := map[string]any{"index": i, "function": map[string]any{"arguments": piece}}
			chunk(frameDelta, choice(map[string]any{"tool_calls": []any{frag}}, nil))
		}
	}
	chunk(frameTail, choice(map[string]any{}, openAIFinishReason(p.stopReason)))
	if p.view.includeUsage && !p.reply.OmitUsage {
		c := map[string]any{
			"id":                 p.messageID,
			"object":             "chat.completion.chunk",
			"created":            p.created,
			"model":              p.model,
			"system_fingerprint": "fp_fakemodel",
			"choices":            []any{},
			"usage":              openAIUsage(p.usage),
		}
		fs = append(fs, frame{kind: frameTail, data: sse("", c)})
	}
	fs = append(fs, frame{kind: frameTail, data: []byte("data: [DONE]\n\n")})
	return fs
}

// openAIFinishReason maps Anthropic's stop reasons to OpenAI's.
func openAIFinishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	default:
		return stop
	}
}

// openAIError is the type, code and message OpenAI uses for a fault kind.
func openAIError(kind, model string) (errType, code, message string) {
	switch kind {
	case FaultRateLimit:
		return "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."
	case FaultOverloaded:
		return "server_error", "", "The server is overloaded or not ready yet."
	case FaultServerError:
		return "server_error", "", "The server had an error while processing your request. Sorry about that!"
	case FaultAuth:
		return "invalid_request_error", "invalid_api_key", "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case FaultPermission:
		return "invalid_request_error", "unsupported_country_region_territory", "You are not allowed to use this resource."
	case FaultModelNotFound:
		return "invalid_request_error", "model_not_found", "The model `" + model + "` does not exist or you do not have access to it."
	case FaultContextTooLong:
		return "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages."
	default:
		return "invalid_request_error", "", "invalid request"
	}
}

// openAIErrorBody is an error response body or in-stream error chunk.
func openAIErrorBody(errType, code, message string) []byte {
	e := map[string]any{"message": message, "type": errType, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	return marshalPlain(map[string]any{"error": e})
}

// openAIUsage is a usage object as Chat Completions reports it: the prompt
// tokens include the cached ones, which prompt_tokens_details counts.
func openAIUsage(u Usage) map[string]any {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return map[string]any{
		"prompt_tokens":         prompt,
		"completion_tokens":     u.OutputTokens,
		"total_tokens":          prompt + u.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheReadInputTokens},
	}
}
