package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// apiError is the body of every error response.
type apiError struct {
	Error string `json:"error"` // what went wrong and what to do
	Code  string `json:"code"`  // a stable word to branch on
	// Conflicts carry the heads: what the writer expected and what the
	// store holds.
	ExpectedHead *int64             `json:"expected_head,omitempty"`
	ActualHead   *int64             `json:"actual_head,omitempty"`
	Running      *checkpoint.Holder `json:"running,omitempty"`
	Hazards      []session.Hazard   `json:"hazards,omitempty"`
	Drift        []string           `json:"drift,omitempty"`
	Valid        []int64            `json:"valid,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, text string, fill func(*apiError)) {
	e := apiError{Error: text, Code: code}
	if fill != nil {
		fill(&e)
	}
	writeJSON(w, status, e)
}

// fail answers err with the status it stands for.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		busy     *BusyError
		conflict *checkpoint.ConflictError
		lease    *checkpoint.LeaseHeldError
		hazard   *liteagent.HazardError
		drift    *liteagent.DriftError
		notCP    *liteagent.NotCheckpointError
		workdir  *liteagent.WorkdirError
		restorin *liteagent.RestoringError
		lookup   *liteagent.LookupError
		tooBig   *http.MaxBytesError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &busy):
		writeError(w, http.StatusConflict, "turn_running", msg, func(e *apiError) {
			h := busy.Head
			e.ActualHead, e.Running = &h, busy.Holder
		})
	case errors.As(err, &conflict):
		writeError(w, http.StatusConflict, "conflict", msg, func(e *apiError) {
			e.ExpectedHead, e.ActualHead = &conflict.Expected, &conflict.Actual
		})
	case errors.As(err, &lease):
		writeError(w, http.StatusConflict, "turn_running", msg, func(e *apiError) {
			h := lease.Holder
			e.Running = &h
			if sum, err := s.store.Head(r.Context(), lease.Session); err == nil {
				e.ActualHead = &sum.Head
			}
		})
	case errors.As(err, &hazard):
		writeError(w, http.StatusConflict, "hazards", msg+" (POST the tokens to /api/sessions/"+hazard.Session+"/acknowledge)", func(e *apiError) { e.Hazards = hazard.Hazards })
	case errors.As(err, &drift):
		writeError(w, http.StatusConflict, "drift", msg, func(e *apiError) { e.Drift = drift.Files })
	case errors.As(err, &notCP):
		writeError(w, http.StatusBadRequest, "not_checkpoint", msg, func(e *apiError) { e.Valid = notCP.Valid })
	case errors.As(err, &workdir), errors.As(err, &restorin):
		writeError(w, http.StatusConflict, "session_state", msg, nil)
	case errors.As(err, &lookup), errors.Is(err, checkpoint.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", msg, nil)
	case errors.Is(err, errNoPending):
		writeError(w, http.StatusNotFound, "not_found", msg, nil)
	case errors.Is(err, errAnswered):
		writeError(w, http.StatusConflict, "answered", msg, nil)
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the request body is over the server's limit of %d bytes", tooBig.Limit), nil)
	case errors.Is(err, checkpoint.ErrInvalid), errors.Is(err, errBadRequest):
		writeError(w, http.StatusBadRequest, "bad_request", msg, nil)
	case errors.Is(err, errShuttingDown), errors.Is(err, liteagent.ErrClosed), errors.Is(err, liteagent.ErrSessionClosed):
		writeError(w, http.StatusServiceUnavailable, "shutting_down", msg, nil)
	case errors.Is(err, liteagent.ErrNoProvider):
		writeError(w, http.StatusServiceUnavailable, "no_model", msg+": start the server with a model to send prompts", nil)
	default:
		writeError(w, http.StatusInternalServerError, "internal", msg, nil)
	}
}

// errBadRequest marks a request the client got wrong.
var errBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// readJSON decodes the request body into v: one JSON object, no unknown
// fields. An empty body is an empty object.
func readJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return badRequest("the body must be JSON (Content-Type: application/json), not %s", ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return err
	}
	if err != nil {
		return badRequest("the body is not the JSON this endpoint takes: %v (see /openapi.json)", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

// deltaJSON is a delta message's data.
type deltaJSON struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"`
	Text  string `json:"text"`
	Name  string `json:"name,omitempty"`
}

// approvalJSON is an approval message's data, and a pending approval.
type approvalJSON struct {
	Session    string          `json:"session"`
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Kind       string          `json:"kind,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Paths      []string        `json:"paths,omitempty"`
	Diff       string          `json:"diff,omitempty"`
	Background bool            `json:"background,omitempty"`
	Server     string          `json:"server,omitempty"`
}

func approvalOf(r liteagent.ApprovalRequest) approvalJSON {
	return approvalJSON{Session: r.Session, CallID: r.CallID, Tool: r.Tool, Kind: string(r.Kind), Input: r.Input,
		Paths: r.Paths, Diff: r.Diff, Background: r.Background, Server: r.Server}
}

// questionJSON is a question message's data, and a pending question.
type questionJSON struct {
	Session    string   `json:"session"`
	CallID     string   `json:"call_id"`
	Question   string   `json:"question"`
	Choices    []string `json:"choices,omitempty"`
	Background bool     `json:"background,omitempty"`
}

func questionOf(q liteagent.InputRequest) questionJSON {
	return questionJSON{Session: q.Session, CallID: q.CallID, Question: q.Question, Choices: q.Choices, Background: q.Background}
}
