package session

// TypePermissionDecided records a decision a permission rule took on a
// tool call, before the call started or was refused.
const TypePermissionDecided Type = "permission_decided"

// PermissionDecided is a permission rule's decision on one tool call:
// allow (the call ran without asking), ask (the user was asked; the
// answer is in the tool_started or tool_finished that follows) or deny
// (the call was refused and the model told Reason).
type PermissionDecided struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Effect string `json:"effect"`
	// Rule is the pattern that took the decision ("bash(go test *)"), or
	// "kind:edit" for a rule that covers a kind of tool (--allow edit).
	Rule string `json:"rule"`
	// Source is where the rule came from: a config file, "flag", "session".
	Source string `json:"source,omitempty"`
	Reason string `json:"reason,omitempty"`
}
