package session

// TypeSessionTitled names a session. The latest such event gives the
// session's title; until the first one, the title is the first prompt's.
const TypeSessionTitled Type = "session_titled"

// Title sources: who named the session.
const (
	TitleByModel = "model" // the model's short title after the first turn
	TitleByUser  = "user"  // lite-agent --title ID TEXT, or the SDK's Rename
)

// SessionTitled is the payload of a session_titled event.
type SessionTitled struct {
	Title string `json:"title"`
	// By says who chose it: TitleByModel or TitleByUser.
	By string `json:"by,omitempty"`
}
