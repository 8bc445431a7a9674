package server

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// keepAlive is how often an idle stream gets a comment line, so proxies
// and clients see it is alive.
const keepAlive = 15 * time.Second

// stream serves GET /api/sessions/{id}/stream: the session's events from
// the log after a seq (Last-Event-ID, else ?after=, else from the start),
// then live: events as they are appended, by this server's turns or
// another process's, with the deltas, approvals and questions of this
// server's turns.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	last, err := resumePoint(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error(), nil)
		return
	}
	sum, err := s.store.Head(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.shuttingDown() {
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "the server is shutting down", nil)
		return
	}
	u, leave := s.feeds.subscribe(id, sum.Head)
	defer func() { leave() }()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 8<<10)
	out := &sseWriter{w: bw, rc: rc, timeout: s.opts.WriteTimeout}
	out.comment("lite-agent session " + id)
	if !out.flush() {
		return
	}
	// catchUp sends the log's events after last, up to what the store
	// holds now; a log shorter than last was rewound.
	catchUp := func() bool {
		sum, err := s.store.Head(r.Context(), id)
		if err != nil {
			return false
		}
		if sum.Head < last {
			last = sum.Head
			out.send(resetMsg(sum.Head))
		}
		for e, err := range s.store.Read(r.Context(), id, last+1) {
			if err != nil {
				return false
			}
			if !out.send(eventMsg(e)) {
				return false
			}
			last = e.Seq
		}
		return out.flush()
	}
	if !catchUp() {
		return
	}
	// What waits for an answer now is sent too: a client that subscribes
	// after a call asked for approval (a fast turn gets there before the
	// client's stream is open) would otherwise never see it. The live copy
	// of one sent here, if it is queued, is not sent again.
	sent := map[string]bool{}
	pending, _ := s.approvals.PendingIn(r.Context(), s.store, id)
	for _, p := range pending {
		var m msg
		switch {
		case p.Approval != nil:
			m = dataMsg(kindApproval, approvalOf(*p.Approval))
		case p.Question != nil:
			m = dataMsg(kindQuestion, questionOf(*p.Question))
		default:
			continue
		}
		sent[m.kind+string(m.data)] = true
		if !out.send(m) {
			return
		}
	}
	if len(pending) > 0 && !out.flush() {
		return
	}
	// deliver sends one live message; an event past the next seq means
	// some were missed, and the log has them.
	deliver := func(m msg) bool {
		switch m.kind {
		case kindApproval, kindQuestion:
			if sent[m.kind+string(m.data)] {
				delete(sent, m.kind+string(m.data))
				return true
			}
		case kindReset:
			last = m.seq
		case kindEvent:
			if m.seq <= last {
				return true
			}
			if m.seq > last+1 {
				return out.flush() && catchUp()
			}
			last = m.seq
		}
		return out.send(m)
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case m := <-u.ch:
			if !deliver(m) {
				return
			}
			// Send what else is queued before flushing.
			for more := true; more; {
				select {
				case m := <-u.ch:
					if !deliver(m) {
						return
					}
				default:
					more = false
				}
			}
			if !out.flush() {
				return
			}
		case <-u.lagged:
			// Too slow for the live feed: start over from the log.
			s.log.Info("stream client fell behind; resyncing it from the log", "session", id, "after", last)
			leave()
			u, leave = s.feeds.subscribe(id, last)
			out.send(dataMsg(kindResync, map[string]int64{"after": last}))
			if !catchUp() {
				return
			}
		case <-tick.C:
			out.comment("keep-alive")
			if !out.flush() {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.closing:
			out.w.WriteString("event: shutdown\ndata: {}\n\n")
			out.flush()
			return
		}
	}
}

// resumePoint is the seq a stream starts after: the Last-Event-ID header
// (a browser's reconnect), else ?after=, else 0.
func resumePoint(r *http.Request) (int64, error) {
	v, what := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a seq: give the seq of the last event received (0 for the whole log)", what, v)
	}
	return n, nil
}

// sseWriter writes Server-Sent Events, each write bounded by a deadline so
// a client that stops reading is dropped instead of holding the handler.
type sseWriter struct {
	w       *bufio.Writer
	rc      *http.ResponseController
	timeout time.Duration
	failed  bool
}

func (o *sseWriter) send(m msg) bool {
	if o.failed {
		return false
	}
	if m.kind == kindEvent {
		fmt.Fprintf(o.w, "id: %d\n", m.seq)
	}
	o.w.WriteString("event: " + m.kind + "\ndata: ")
	o.w.Write(m.data)
	o.w.WriteString("\n\n")
	if o.w.Buffered() > 4<<10 {
		return o.flush()
	}
	return true
}

func (o *sseWriter) comment(text string) { o.w.WriteString(": " + text + "\n\n") }

func (o *sseWriter) flush() bool {
	if o.failed {
		return false
	}
	o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	if err := o.w.Flush(); err != nil {
		o.failed = true
		return false
	}
	if err := o.rc.Flush(); err != nil {
		o.failed = true
		return false
	}
	return true
}
