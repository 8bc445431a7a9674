package fakemodel

import (
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Title requests: a request whose system prompt is provider.TitleSystem
// (the one cheap request in which the agent asks for a session's title) is
// answered by the server itself, whatever the script says, with the first
// words of the user's message, capitalised: "fix the zebra parser please
// now and then" gets "Fix the zebra parser please now". Such requests take
// no reply from the script and are not listed by Requests, so scripts and
// their checks stay as they were; Titles lists the titles served.

// titleWords is how many words of the user's message a title keeps.
const titleWords = 6

// TitleFor is the title the server answers a title request for a
// conversation starting with prompt.
func TitleFor(prompt string) string {
	words := strings.Fields(prompt)
	words = words[:min(len(words), titleWords)]
	t := strings.Join(words, " ")
	if r, n := utf8.DecodeRuneInString(t); n > 0 {
		t = string(unicode.ToUpper(r)) + t[n:]
	}
	if t == "" {
		t = "Untitled"
	}
	return t
}

// Titles returns the titles the server served, oldest first.
func (s *Server) Titles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.titles)
}

// serveTitle streams the answer to a title request.
func (s *Server) serveTitle(w http.ResponseWriter, v view, format string, bodyLen int) {
	title := TitleFor(v.lastUser)
	s.mu.Lock()
	s.titles = append(s.titles, title)
	seq := -len(s.titles) // never a script's request number
	s.mu.Unlock()
	p := newPlan(&Reply{Text: title}, v, seq, bodyLen)
	var frames []frame
	if format == FormatAnthropic {
		frames = anthropicFrames(p)
	} else {
		frames = openAIFrames(p)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for _, f := range frames {
		if _, err := w.Write(f.data); err != nil {
			return
		}
		_ = rc.Flush()
	}
}
