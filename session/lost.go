package session

// TypeEventLost stands in, in a salvaged log, for an event the store could
// not read back as written (a damaged or missing record). It keeps its seq,
// so the events salvaged after it keep theirs and the log has no gap. It is
// never written by a turn; replay skips it: what the lost event said (a
// prompt, a tool's result) is simply not known, so a tool call whose result
// was lost is a recovery hazard like any call cut off by a crash.
const TypeEventLost Type = "event_lost"

// EventLost is the payload of event_lost.
type EventLost struct {
	// Reason is the store's account of the damage.
	Reason string `json:"reason"`
}
