// Package mcp connects lite-agent to Model Context Protocol servers and
// offers their tools to the agent loop as tool.Tool values named
// mcp__<server>__<tool>. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Start connects to every configured server at once, each within its own
// timeout. A server that fails to start (its command is missing, it exits,
// it never answers initialize, it writes something that is not JSON-RPC) is
// kept in the Set with state StateFailed and an error naming the server, its
// command or URL and the tail of what it wrote to stderr; the other servers
// go on.
//
// Stdio servers run in their own process group. Close stops them politely,
// the way the MCP specification asks: stdin is closed, then after a grace
// period the group gets SIGTERM, then SIGKILL, so no process of the server
// survives it.
//
// What a server offers:
//
//   - tools, with their JSON schemas, as tools of kind tool.KindMCP (they
//     always need approval; a read-only annotation is recorded in
//     tool.Spec.ReadOnly for approval rules to use, and allows nothing by
//     itself). Results: text as text, structured content as JSON, embedded
//     text resources as text, images (PNG, JPEG, GIF, WebP) as
//     tool.Result.Images for the model to see; audio, binary resources and
//     other images are described by type and size. A result with isError
//     set is a tool error the model reads.
//   - resources, through one tool, mcp_read_resource (list, or read a URI);
//   - prompts, through Set.Prompts and Set.GetPrompt, which clients offer as
//     slash commands (/mcp__server__prompt).
//
// notifications/tools/list_changed marks a server's tool list stale; the
// next Tools call lists it again (the SDK calls it before every model
// call), so a changed list takes effect at the model's next call. Left out: sampling, elicitation, roots, resource subscriptions,
// completion, logging notifications and OAuth.
package mcp
