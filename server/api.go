package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// route is one pattern the server serves. The table is the one list of
// routes: the mux is built from it and the OpenAPI test checks it.
type route struct {
	method, pattern string
	h               http.HandlerFunc
}

func (s *Server) table() []route {
	return []route{
		{"GET", "/openapi.json", s.openAPI},
		{"GET", "/api/sessions", s.listSessions},
		{"POST", "/api/sessions", s.createSession},
		{"GET", "/api/search", s.search},
		{"GET", "/api/sessions/{id}", s.sessionInfo},
		{"DELETE", "/api/sessions/{id}", s.deleteSession},
		{"GET", "/api/sessions/{id}/checkpoints", s.checkpoints},
		{"GET", "/api/sessions/{id}/events", s.events},
		{"GET", "/api/sessions/{id}/stream", s.stream},
		{"GET", "/api/sessions/{id}/pending", s.pending},
		{"POST", "/api/sessions/{id}/prompts", s.prompt},
		{"POST", "/api/sessions/{id}/cancel", s.cancel},
		{"POST", "/api/sessions/{id}/approvals/{call}", s.approve},
		{"POST", "/api/sessions/{id}/questions/{call}", s.answerQuestion},
		{"POST", "/api/sessions/{id}/rewind", s.rewind},
		{"POST", "/api/sessions/{id}/fork", s.fork},
		{"POST", "/api/sessions/{id}/acknowledge", s.acknowledge},
		{"GET", "/{$}", s.pageList},
		{"GET", "/s/{id}", s.pageSession},
		{"GET", "/s/{id}/timeline", s.pageTimeline},
		{"GET", "/static/{file}", s.static},
	}
}

// summaryJSON is a session as the list shows it.
type summaryJSON struct {
	session.Summary
	Hazards int  `json:"hazards"`
	Running bool `json:"running_here,omitempty"` // a turn of this server runs in it
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.agent.ListSessions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	running := map[string]bool{}
	for _, id := range s.Running() {
		running[id] = true
	}
	out := make([]summaryJSON, 0, len(list))
	for _, sum := range list {
		out = append(out, summaryJSON{Summary: sum, Hazards: sum.Hazards(), Running: running[sum.ID]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	limit, err := intParam(r, "limit", 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := checkpoint.ParseQuery(q); err != nil {
		s.fail(w, r, badRequest("q %q: give one or more words to look for", q))
		return
	}
	hits, err := s.agent.SearchSessions(r.Context(), q, &liteagent.SearchOptions{Limit: limit, AllNamespaces: r.URL.Query().Get("all") == "1"})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if hits == nil {
		hits = []checkpoint.Hit{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"hits": hits})
}

func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) {
	info, err := s.info(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request) {
	cps, err := s.agent.ListCheckpoints(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if cps == nil {
		cps = []session.Checkpoint{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": cps})
}

// maxPage caps a page of events.
const maxPage = 1000

// eventsPage is a page of a session's log.
type eventsPage struct {
	Events []session.Event `json:"events"`
	Head   int64           `json:"head"`
	// Next is the seq the next page starts at; absent on the last page.
	Next int64 `json:"next,omitempty"`
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	from, err := intParam(r, "from", 1)
	if err == nil && from < 1 {
		err = badRequest("from must be a seq of 1 or more, not %d", from)
	}
	limit, err2 := intParam(r, "limit", 200)
	if err == nil && err2 != nil {
		err = err2
	}
	if err == nil && (limit < 1 || limit > maxPage) {
		err = badRequest("limit must be between 1 and %d, not %d", maxPage, limit)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sum, err := s.store.Head(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := eventsPage{Events: []session.Event{}, Head: sum.Head}
	for e, err := range s.store.Read(r.Context(), id, int64(from)) {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(page.Events) == limit {
			page.Next = e.Seq
			break
		}
		page.Events = append(page.Events, e)
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) pending(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.store.Head(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	pending, err := s.approvals.PendingIn(r.Context(), s.store, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	approvals, questions := []approvalJSON{}, []questionJSON{}
	for _, p := range pending {
		if p.Approval != nil {
			approvals = append(approvals, approvalOf(*p.Approval))
		} else {
			questions = append(questions, questionOf(*p.Question))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": approvals, "questions": questions})
}

// promptRequest is the body of POST /api/sessions and …/prompts.
type promptRequest struct {
	Prompt string `json:"prompt"`
	// Wait makes the request return when the turn ends, with its result,
	// instead of as soon as the prompt is in the log.
	Wait bool `json:"wait,omitempty"`
	// TakeOver closes a turn the log shows running in a process that
	// died (on stores that cannot tell live from dead) as interrupted.
	TakeOver bool `json:"take_over,omitempty"`
}

// promptResponse says where a turn is: under way (202) or ended (200,
// with wait).
type promptResponse struct {
	Session   string `json:"session"`
	PromptSeq int64  `json:"prompt_seq"`
	Stream    string `json:"stream"`
	// With wait: how the turn ended.
	Result *liteagent.Result `json:"result,omitempty"`
	Error  string            `json:"error,omitempty"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req promptRequest
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if strings.TrimSpace(req.Prompt) == "" {
		s.fail(w, r, badRequest("a new session starts with its first prompt: give {\"prompt\": \"...\"}"))
		return
	}
	if s.shuttingDown() {
		s.fail(w, r, errShuttingDown)
		return
	}
	sess, err := s.agent.NewSession(r.Context(), s.sessionOptions())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.runPrompt(w, r, sess.ID(), sess, req)
}

func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	var req promptRequest
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if strings.TrimSpace(req.Prompt) == "" {
		s.fail(w, r, badRequest("the prompt is empty: give {\"prompt\": \"...\"}"))
		return
	}
	s.runPrompt(w, r, r.PathValue("id"), nil, req)
}

func (s *Server) runPrompt(w http.ResponseWriter, r *http.Request, id string, fresh *liteagent.Session, req promptRequest) {
	t, seq, err := s.startTurn(r.Context(), id, fresh, req.Prompt, req.TakeOver)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := promptResponse{Session: id, PromptSeq: seq, Stream: "/api/sessions/" + id + "/stream?after=" + strconv.FormatInt(seq-1, 10)}
	if !req.Wait {
		writeJSON(w, http.StatusAccepted, resp)
		return
	}
	select {
	case <-t.done:
	case <-r.Context().Done():
		return
	}
	resp.Result = t.res
	if t.err != nil {
		resp.Error = t.err.Error()
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	t, ok := s.cancelTurn(id)
	if !ok {
		if _, err := s.store.Head(r.Context(), id); err != nil {
			s.fail(w, r, err)
			return
		}
		writeError(w, http.StatusConflict, "no_turn", "no turn of this server runs in session "+id+" (a turn another process runs is cancelled there)", nil)
		return
	}
	select {
	case <-t.done:
	case <-r.Context().Done():
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "cancelled": true, "head": t.head})
}

// approvalAnswer is the body of POST …/approvals/{call}.
type approvalAnswer struct {
	// Decision is "once" (run this call), "session" (this call and every
	// later call of the tool in the session) or "deny".
	Decision string `json:"decision"`
	// Reason, with deny, is told to the model.
	Reason string `json:"reason,omitempty"`
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	var req approvalAnswer
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var d liteagent.Decision
	switch req.Decision {
	case "once":
		d = liteagent.AllowOnce
	case "session":
		d = liteagent.AllowSession
	case "deny":
		d = liteagent.Deny
	default:
		s.fail(w, r, badRequest("decision must be once, session or deny, not %q", req.Decision))
		return
	}
	if s.approvals == nil {
		s.fail(w, r, errNoPending)
		return
	}
	k := pendingKey{r.PathValue("id"), r.PathValue("call")}
	if err := s.approvals.answer(r.Context(), k, false, answer{Decision: d, Reason: strings.TrimSpace(req.Reason)}); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": k.session, "call_id": k.call, "decision": req.Decision})
}

func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Answer string `json:"answer"`
	}
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.approvals == nil {
		s.fail(w, r, errNoPending)
		return
	}
	k := pendingKey{r.PathValue("id"), r.PathValue("call")}
	if err := s.approvals.answer(r.Context(), k, true, answer{Text: req.Answer}); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": k.session, "call_id": k.call})
}

// rewindRequest is the body of POST …/rewind.
type rewindRequest struct {
	Seq int64 `json:"seq"`
	// Preview computes what the rewind would do (files, drift, calls it
	// cannot undo) and writes nothing.
	Preview bool `json:"preview,omitempty"`
	// Force overwrites files someone changed since the session left them.
	Force bool `json:"force,omitempty"`
}

func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req rewindRequest
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Seq < 1 {
		s.fail(w, r, badRequest("seq must be a checkpoint's seq (GET /api/sessions/%s/checkpoints lists them)", id))
		return
	}
	if !req.Preview {
		if err := s.idle(id); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	res, err := s.agent.Restore(r.Context(), id, req.Seq, &liteagent.RestoreOptions{DryRun: req.Preview, Force: req.Force})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !req.Preview {
		s.feeds.publish(id, resetMsg(res.ToSeq))
	}
	writeJSON(w, http.StatusOK, map[string]any{"preview": req.Preview, "result": res})
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Seq int64 `json:"seq"`
	}
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Seq < 0 {
		s.fail(w, r, badRequest("seq must be a checkpoint's seq, or 0 for the whole log"))
		return
	}
	id, err := s.agent.Fork(r.Context(), r.PathValue("id"), req.Seq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"session": id, "parent": r.PathValue("id"), "seq": req.Seq})
}

func (s *Server) acknowledge(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct {
		Tokens []string `json:"tokens"`
	}
	if err := readJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.Tokens) == 0 {
		s.fail(w, r, badRequest("give the review tokens to acknowledge: {\"tokens\": [\"rv-…\"]} (GET /api/sessions/%s lists the hazards)", id))
		return
	}
	if err := s.idle(id); err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.agent.SessionInfo(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var open []string
	for _, h := range info.Hazards {
		open = append(open, h.Token)
	}
	for _, tok := range req.Tokens {
		if !slices.Contains(open, tok) {
			s.fail(w, r, badRequest("review token %q does not name an interrupted tool call of session %s (open tokens: %s)", tok, id, strings.Join(open, ", ")))
			return
		}
	}
	sess, err := s.agent.OpenSession(r.Context(), id, nil)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer sess.Close()
	if err := sess.Acknowledge(r.Context(), req.Tokens...); err != nil {
		s.fail(w, r, err)
		return
	}
	s.drop(id) // the server's copy of the session is behind now
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "acknowledged": req.Tokens, "head": sess.Head()})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.idle(id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.drop(id)
	if err := s.agent.DeleteSession(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.feeds.publish(id, resetMsg(0))
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "deleted": true})
}

// intParam reads query parameter name as an integer, def when absent.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badRequest("%s must be a number, not %q", name, v)
	}
	return n, nil
}
