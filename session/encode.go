package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// envelope is the JSON form of an event.
type envelope struct {
	V    int             `json:"v"`
	Seq  int64           `json:"seq"`
	Type Type            `json:"type"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON encodes the event as a versioned envelope, passing Data
// through unchanged.
func (e Event) MarshalJSON() ([]byte, error) {
	data := e.Data
	if len(data) > 0 && !json.Valid(data) {
		return nil, fmt.Errorf("encode %s event %d: data is not valid JSON", e.Type, e.Seq)
	}
	var b bytes.Buffer
	b.Grow(len(data) + 96)
	b.WriteString(`{"v":`)
	fmt.Fprint(&b, Version)
	b.WriteString(`,"seq":`)
	fmt.Fprint(&b, e.Seq)
	b.WriteString(`,"type":`)
	t, _ := json.Marshal(string(e.Type))
	b.Write(t)
	b.WriteString(`,"time":"`)
	b.WriteString(e.Time.UTC().Format(time.RFC3339Nano))
	b.WriteByte('"')
	if len(data) > 0 {
		b.WriteString(`,"data":`)
		b.Write(data)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes a versioned envelope. An envelope of a newer format
// version than this build knows is a *NewerError (ErrNewer): upgrade.
func (e *Event) UnmarshalJSON(b []byte) error {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("decode event: %w", err)
	}
	if env.V > Version {
		return fmt.Errorf("decode event %d: %w", env.Seq, &NewerError{Format: "event envelope version", Version: env.V, Known: Version})
	}
	*e = Event{Seq: env.Seq, Type: env.Type, Time: env.Time.UTC(), Data: env.Data}
	return nil
}
