// Package permission is the one rule engine that decides, before the user
// is asked, whether a tool call is allowed, asked about or denied.
//
// A rule is an effect (allow, ask or deny) and a pattern: a tool name
// ("bash", "edit", "mcp__github__create_issue", with * for any run of
// name characters), optionally followed by an argument in parentheses.
// For shell tools the argument matches the command ("bash(go test *)":
// * is any text, and a trailing " *" also matches nothing); for file
// tools it is a doublestar glob over the workdir-relative paths the call
// touches ("edit(docs/**)", "write(**/*.md)", "read(**)").
//
// Deny wins over ask, ask over allow. A shell command is parsed (with
// mvdan.cc/sh's POSIX/Bash parser) into its simple commands, those chained
// with ;, &&, ||, | and those inside $(...), `...`, subshells and loops: it
// is denied or asked about if any part matches such a rule, and allowed
// only if every part matches an allow rule. A file call likewise is allowed
// only if every path matches. When several rules of the winning effect
// match, the most specific one (a pattern with an argument, then the most
// literal characters) is the one reported, with its reason.
package permission
