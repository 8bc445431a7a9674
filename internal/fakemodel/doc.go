// Package fakemodel is a scriptable model server for tests, benchmarks and
// the offline demo. It speaks two streaming wire formats on 127.0.0.1, as
// the official SDKs parse them:
//
//   - the Anthropic Messages API: POST /v1/messages with "stream": true,
//     answered with the events message_start, ping, content_block_start,
//     content_block_delta (text_delta, input_json_delta),
//     content_block_stop, message_delta (stop_reason, usage) and
//     message_stop;
//   - the OpenAI Chat Completions API: POST /v1/chat/completions with
//     "stream": true, answered with chat.completion.chunk objects whose
//     choices[0].delta carries content and tool_calls fragments (index,
//     id, function.name, function.arguments), a finish_reason of "stop",
//     "tool_calls" or "length", a usage chunk when
//     stream_options.include_usage is set, then "data: [DONE]".
//
// Text and tool inputs are split into several deltas. Errors use each
// API's own error body format, so SDKs decode them as they would a real
// server's.
//
// # Scripts
//
// A server follows a Script, a JSON object holding an ordered list of
// replies. Each request, whichever endpoint it reaches, is answered with
// the next reply:
//
//	{
//	  "replies": [
//	    {
//	      "name": "write the file",          // a label for logs and errors
//	      "expect": {                         // checks on the request (all optional)
//	        "format": "anthropic",            // or "openai"
//	        "model": "claude-sonnet-4-5",
//	        "last_user_contains": ["hello"],  // the last user message with text
//	        "system_contains": ["coding agent"],
//	        "body_contains": ["\"tools\""],   // the raw request body
//	        "tool_result_for": ["toolu_1"],   // a tool result for this call id is present
//	        "tools": ["write"]                // tools the request offers
//	      },
//	      "text": "I'll write it.",           // streamed first
//	      "tool_calls": [                     // then these, input streamed as JSON fragments
//	        {"id": "toolu_1", "name": "write", "input": {"path": "a.txt", "content": "hi"}}
//	      ],
//	      "stop_reason": "tool_use",          // default: tool_use with tool calls, else end_turn
//	      "usage": {"input_tokens": 10, "output_tokens": 5}, // default: estimated (below)
//	      "delay_ms": 0,                      // before the first byte
//	      "delta_delay_ms": 0,                // between deltas
//	      "chunk_size": 5,                    // characters per delta
//	      "omit_usage": false,                // OpenAI: no usage chunk (like some local servers)
//	      "omit_tool_ids": false,             // OpenAI: tool calls without ids (likewise)
//	      "fault": null                       // see below
//	    }
//	  ],
//	  "when_done": "error"                    // or "repeat_last"
//	}
//
// Script-wide settings sit beside "replies":
//
//	"context_window": 30000,                 // tokens; larger requests get the API's "prompt is too long" 400
//	"summary": {"marker": "…", "text": "…"}  // answers summary requests (their last user message holds marker) at any point
//
// and a reply may carry "thinking": "…", streamed in the Anthropic format
// (when the request enables extended thinking) as a thinking block with a
// signature, and in the OpenAI format as the deltas' "reasoning_content";
// see thinking.go for the checks made on thinking sent back.
//
// # Tokens and the prompt cache
//
// Tokens are estimated deterministically: a request's input is a quarter of
// its body's bytes (rounded up), a reply's output a quarter of its text,
// thinking and tool inputs. Anthropic requests are cached by the API's rule:
// the cached prefix is the longest prefix, ending at or before the last
// cache_control breakpoint, that an earlier request to the same server
// wrote at one of its breakpoints (tools, then system blocks, then message
// blocks, compared without their cache_control fields); the request writes
// its prefix up to its last breakpoint. Usage then reports
// cache_read_input_tokens, cache_creation_input_tokens and, as input_tokens,
// the rest. OpenAI requests are cached as OpenAI does by itself: the
// longest prefix any earlier request sent, in steps of 128 tokens from 1024
// on, reported as usage.prompt_tokens_details.cached_tokens. Nothing
// expires.
//
// (Comments are for this page only: scripts are plain JSON, and unknown
// fields are errors.) testdata/example.json shows every field.
//
// A fault makes a reply fail the way real servers do:
//
//	{"kind": "rate_limit", "retry_after": 2}      // 429 with Retry-After: 2
//	{"kind": "rate_limit", "retry_after_ms": 20}  // 429 with retry-after-ms: 20, Retry-After: 1
//	{"kind": "overloaded"}                        // Anthropic 529 overloaded_error, OpenAI 503
//	{"kind": "server_error"}                      // 500
//	{"kind": "auth"}                              // 401
//	{"kind": "permission"}                        // 403
//	{"kind": "model_not_found"}                   // 404, naming the requested model
//	{"kind": "context_too_long"}                  // 400 with each API's "prompt too long" error
//	{"kind": "bad_request", "message": "…"}       // 400
//	{"status": 502, "message": "bad gateway"}     // any error status
//	{"kind": "cut"}                               // 200, then the connection drops half-way
//	{"kind": "cut", "after_deltas": 3}            // … after 3 deltas
//	{"kind": "overloaded", "after_deltas": 2}     // 200, 2 deltas, then an error event in the stream
//
// When an expectation fails, the request is answered with HTTP 400 and a
// message naming the reply and what was wrong, and the failure is recorded
// (Server.Failures, Server.Err). When the script has run out, requests
// are answered with HTTP 400 saying so (also recorded), unless
// "when_done" is "repeat_last", which answers with the last reply again.
//
// Every request (method, path, body, reply used, status) is kept in
// memory (Server.Requests) and, with Options.Log, written as JSON Lines.
// Request headers are not logged, so API keys never reach a log.
//
// # Use
//
// In Go tests:
//
//	srv, err := fakemodel.Start(script)
//	…
//	defer srv.Close()
//	// Anthropic SDK base URL: srv.URL(); OpenAI base URL: srv.OpenAIURL().
//
// From a shell, command cmd/fakemodel serves a script file (or the bundled
// demo, DemoScript) and prints its base URL on its first line of output.
package fakemodel
