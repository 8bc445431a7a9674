package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/provider"
)

// Options configures a Server. The zero value (or nil) is fine.
type Options struct {
	// Addr is the address to listen on; empty means "127.0.0.1:0", a free
	// port on the loopback interface.
	Addr string
	// Log, when set, receives every request as one JSON object per line
	// (the fields of Request). Writes are serialised.
	Log io.Writer
}

// Request is a request the server received, as logged.
type Request struct {
	Seq    int       `json:"seq"` // 1, 2, 3 … in arrival order
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// Format is FormatAnthropic or FormatOpenAI, from the path; empty for
	// other paths.
	Format string `json:"format,omitempty"`
	Model  string `json:"model,omitempty"`
	// Body is the request body: its JSON as sent, or a JSON string holding
	// it when it is not JSON.
	Body json.RawMessage `json:"body,omitempty"`
	// Reply is the 1-based index of the script reply used; 0 for none.
	Reply int `json:"reply"`
	// Status is the HTTP status answered (200 for streams, even those a
	// fault cuts or ends with an error event).
	Status int `json:"status"`
	// Failure says why an expectation failed or no reply was left.
	Failure string `json:"failure,omitempty"`
}

// Server is a fake model server following a Script. Its methods are safe
// for concurrent use.
type Server struct {
	script   Script
	ln       net.Listener
	srv      *http.Server
	url      string
	log      io.Writer
	handlers sync.WaitGroup
	served   chan struct{}
	memo     blockMemo // what the contents and blocks requests sent hold (cache.go)

	mu       sync.Mutex
	next     int               // the next reply to use
	written  map[[32]byte]bool // prompt-cache prefixes written (Anthropic)
	seen     map[[32]byte]bool // prompt prefixes sent (OpenAI)
	thought  map[string]string // tool call id → signature of the thinking before it
	requests []Request
	failures []string
	titles   []string // the titles served, in order
	closed   bool
}

// Start starts a server for script on a free loopback port.
func Start(script *Script) (*Server, error) {
	return StartWithOptions(script, nil)
}

// StartWithOptions starts a server for script. The server runs until
// Close.
func StartWithOptions(script *Script, opts *Options) (*Server, error) {
	if err := script.Validate(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen on %s: %w", addr, err)
	}
	s := &Server{
		script:  *script,
		written: map[[32]byte]bool{},
		seen:    map[[32]byte]bool{},
		thought: map[string]string{},
		ln:      ln,
		url:     "http://" + ln.Addr().String(),
		log:     opts.Log,
		served:  make(chan struct{}),
	}
	s.script.Replies = append([]Reply(nil), script.Replies...)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the server's base URL, such as "http://127.0.0.1:41234": the
// base URL for the Anthropic SDK, which adds "/v1/messages".
func (s *Server) URL() string { return s.url }

// OpenAIURL is the base URL for OpenAI clients, which add
// "/chat/completions": URL() + "/v1".
func (s *Server) OpenAIURL() string { return s.url + "/v1" }

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Failures returns the expectation failures so far (and requests that
// came after the script ran out), one message per failed request.
func (s *Server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

// Err joins the failures into one error; nil when there were none.
func (s *Server) Err() error {
	fails := s.Failures()
	if len(fails) == 0 {
		return nil
	}
	errs := make([]error, len(fails))
	for i, f := range fails {
		errs[i] = errors.New(f)
	}
	return errors.Join(errs...)
}

// Remaining is how many replies of the script are still unused.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script.Replies) - s.next
}

// Close stops the server: it closes the listener and every connection,
// and waits for the handlers to return. Calling it again does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.srv.Close()
	<-s.served
	s.handlers.Wait()
	return err
}

// Frame kinds: the parts of a stream before, between and after deltas.
const (
	frameHead = iota
	frameDelta
	frameTail
)

// frame is one server-sent event, encoded.
type frame struct {
	kind int
	data []byte
}

// plan is everything needed to write one streamed reply.
type plan struct {
	reply      *Reply
	view       view
	seq        int
	model      string
	messageID  string
	created    int64
	toolIDs    []string
	inputs     []string // each tool call's input, compact JSON
	stopReason string
	usage      Usage
	chunk      int
	// thinking is the thinking streamed before the text, "" for none.
	thinking string
}

const maxBody = 64 << 20

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "fakemodel: the server is closing", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1) // under mu, so never concurrently with Close's Wait
	s.mu.Unlock()
	defer s.handlers.Done()

	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "fakemodel: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	format := formatOf(r.URL.Path)
	entry := Request{Method: r.Method, Path: r.URL.Path, Format: format}

	if format == "" || r.Method != http.MethodPost {
		entry.Body = logBody(body)
		msg := fmt.Sprintf("fakemodel: no endpoint %s %s; use POST /v1/messages (Anthropic) or POST /v1/chat/completions (OpenAI)", r.Method, r.URL.Path)
		status := http.StatusNotFound
		if format != "" {
			status = http.StatusMethodNotAllowed
		}
		entry.Status = status
		s.record(&entry, "")
		writeError(w, format, status, FaultBadRequest, msg, entry.Seq)
		return
	}

	var v view
	if format == FormatAnthropic {
		v, err = parseAnthropic(body, &s.memo)
	} else {
		v, err = parseOpenAI(body, &s.memo)
	}
	entry.Model = v.model
	if err != nil {
		entry.Body = logBody(body)
		entry.Status = http.StatusBadRequest
		s.record(&entry, "")
		writeError(w, format, http.StatusBadRequest, FaultBadRequest, "fakemodel: "+err.Error(), entry.Seq)
		return
	}
	// A body that decoded is JSON: it is kept as it is (logBody would check
	// it again, a millisecond for a long transcript).
	entry.Body = json.RawMessage(body)

	// Refused before a reply is used, so the script stays in step. The
	// OpenAI format also serves whole answers (for clients that fall back
	// to them).
	if !v.stream && format != FormatOpenAI {
		entry.Status = http.StatusBadRequest
		s.record(&entry, "")
		writeError(w, format, http.StatusBadRequest, FaultBadRequest, `fakemodel: only streaming requests are served; send "stream": true`, entry.Seq)
		return
	}

	if v.system == provider.TitleSystem {
		s.serveTitle(w, v, format, len(body))
		return
	}
	if window := s.script.ContextWindow; window > 0 && tokens(len(body)) > window {
		entry.Status = http.StatusBadRequest
		s.record(&entry, "")
		writeError(w, format, http.StatusBadRequest, FaultContextTooLong, contextError(format, tokens(len(body)), window), entry.Seq)
		return
	}
	s.mu.Lock()
	complaint := s.checkThinking(v)
	s.mu.Unlock()
	if complaint != "" {
		entry.Status = http.StatusBadRequest
		s.record(&entry, "fakemodel: the request breaks the API's thinking rules: "+complaint)
		writeError(w, format, http.StatusBadRequest, FaultBadRequest, complaint, entry.Seq)
		return
	}

	reply, index, failure := s.pick(v, body)
	entry.Reply = index
	if failure != "" {
		entry.Status = http.StatusBadRequest
		s.record(&entry, failure)
		writeError(w, format, http.StatusBadRequest, FaultBadRequest, failure, entry.Seq)
		return
	}

	fault := reply.Fault
	var kind string
	status := http.StatusOK
	if fault != nil {
		kind = fault.Kind
		if kind == "" {
			kind = kindForStatus(fault.Status)
		}
		if fault.AfterDeltas == nil && kind != FaultCut && kind != FaultStall {
			status = faultStatus(format, kind, fault)
		}
	}
	entry.Status = status
	s.record(&entry, "")

	ctx := r.Context()
	if !sleep(ctx, time.Duration(reply.DelayMS)*time.Millisecond) {
		return
	}
	if status != http.StatusOK {
		setRetryAfter(w.Header(), fault)
		writeError(w, format, status, kind, faultMessage(format, kind, fault, v.model), entry.Seq)
		return
	}

	p := newPlan(reply, v, entry.Seq, len(body))
	s.account(p)
	if format == FormatOpenAI && !v.stream {
		writeCompletion(w, p, entry.Seq)
		return
	}
	var frames []frame
	if format == FormatAnthropic {
		frames = anthropicFrames(p)
	} else {
		frames = openAIFrames(p)
	}
	faultAt := -1
	if fault != nil {
		total := 0
		for _, f := range frames {
			if f.kind == frameDelta {
				total++
			}
		}
		faultAt = total / 2
		if kind == FaultStall {
			faultAt = 0
		}
		if fault.AfterDeltas != nil {
			faultAt = min(*fault.AfterDeltas, total)
		}
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("request-id", requestID(entry.Seq))
	h.Set("x-request-id", requestID(entry.Seq))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	deltaDelay := time.Duration(reply.DeltaDelayMS) * time.Millisecond
	deltas := 0
	for _, f := range frames {
		if f.kind != frameHead && deltas == faultAt {
			if kind == FaultCut {
				// Drop the connection without ending the chunked body,
				// as a failing proxy or server does.
				panic(http.ErrAbortHandler)
			}
			if kind == FaultStall {
				<-ctx.Done() // the client gave up, or the server closed
				return
			}
			_, _ = w.Write(streamError(format, kind, faultMessage(format, kind, fault, v.model), entry.Seq))
			_ = rc.Flush()
			return
		}
		if f.kind == frameDelta {
			if deltas > 0 && !sleep(ctx, deltaDelay) {
				return
			}
			deltas++
		}
		if _, err := w.Write(f.data); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// formatOf is the wire format served at path.
func formatOf(path string) string {
	switch strings.TrimSuffix(path, "/") {
	case "/v1/messages", "/messages":
		return FormatAnthropic
	case "/v1/chat/completions", "/chat/completions":
		return FormatOpenAI
	}
	return ""
}

// pick chooses the reply for a request and checks its expectations. It
// returns the reply, its 1-based index (0 for none), and a failure message
// if the request is to be refused.
func (s *Server) pick(v view, body []byte) (*Reply, int, string) {
	if sum := s.script.Summary; sum != nil && strings.Contains(v.lastUser, sum.Marker) {
		return &Reply{Name: "summary", Text: sum.Text, DelayMS: sum.DelayMS}, 0, ""
	}
	s.mu.Lock()
	n := len(s.script.Replies)
	i := s.next
	switch {
	case i < n:
		s.next++
	case s.script.WhenDone == WhenDoneRepeatLast:
		i = n - 1
	default:
		s.mu.Unlock()
		return nil, 0, fmt.Sprintf("fakemodel: the script ran out: this is request %d but the script has %d replies (add replies, or set \"when_done\": %q)", i+1, n, WhenDoneRepeatLast)
	}
	reply := &s.script.Replies[i]
	s.mu.Unlock()
	if fails := reply.Expect.check(v, body); len(fails) > 0 {
		return reply, i + 1, fmt.Sprintf("fakemodel: reply %d%s: expectation failed: %s", i+1, nameSuffix(reply.Name), strings.Join(fails, "; "))
	}
	return reply, i + 1, ""
}

// record numbers and logs a request, and notes its failure.
func (s *Server) record(e *Request, failure string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Seq = len(s.requests) + 1
	e.Time = time.Now().UTC()
	e.Failure = failure
	s.requests = append(s.requests, *e)
	if failure != "" {
		s.failures = append(s.failures, fmt.Sprintf("request %d (%s %s): %s", e.Seq, e.Method, e.Path, failure))
	}
	if s.log != nil {
		b, err := json.Marshal(e)
		if err == nil {
			_, _ = s.log.Write(append(b, '\n'))
		}
	}
}

// logBody keeps a copy of a request body as JSON.
func logBody(body []byte) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	if json.Valid(body) {
		return append(json.RawMessage(nil), body...)
	}
	b, _ := json.Marshal(string(body))
	return b
}

// account works out what the reply's request read from and wrote to the
// prompt cache, unless the script gives the usage, and remembers the
// thinking that came before the reply's tool calls.
func (s *Server) account(p *plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var use cacheUse
	if p.view.format == FormatAnthropic {
		use = s.anthropicCache(p.view.segs)
	} else {
		use = s.openAICache(p.view.segs)
	}
	if p.reply.Usage == nil {
		p.usage.InputTokens = max(0, p.usage.InputTokens-use.read-use.write)
		p.usage.CacheReadInputTokens, p.usage.CacheCreationInputTokens = use.read, use.write
	}
	if p.reply.Thinking != "" && (p.view.format == FormatOpenAI || p.view.thinking) {
		p.thinking = p.reply.Thinking
		for _, id := range p.toolIDs {
			s.thought[id] = signature(p.thinking)
		}
	}
}

// newPlan works out the ids, inputs, stop reason and usage of a reply.
func newPlan(reply *Reply, v view, seq, bodyLen int) *plan {
	p := &plan{reply: reply, view: v, seq: seq, model: v.model, created: time.Now().Unix(), chunk: reply.ChunkSize}
	if p.chunk == 0 {
		p.chunk = 5
	}
	if v.format == FormatAnthropic {
		p.messageID = fmt.Sprintf("msg_fake_%04d", seq)
	} else {
		p.messageID = fmt.Sprintf("chatcmpl-fake-%04d", seq)
	}
	outLen := len(reply.Text) + len(reply.Thinking)
	for i, tc := range reply.ToolCalls {
		id := tc.ID
		if id == "" {
			prefix := "toolu_fake_"
			if v.format == FormatOpenAI {
				prefix = "call_fake_"
			}
			id = fmt.Sprintf("%s%d_%d", prefix, seq, i+1)
		}
		p.toolIDs = append(p.toolIDs, id)
		input := "{}"
		if len(tc.Input) > 0 {
			var obj any
			_ = json.Unmarshal(tc.Input, &obj) // validated by Script.Validate
			b, _ := json.Marshal(obj)
			input = string(b)
		}
		p.inputs = append(p.inputs, input)
		outLen += len(input)
	}
	p.stopReason = reply.StopReason
	if p.stopReason == "" {
		p.stopReason = "end_turn"
		if len(reply.ToolCalls) > 0 {
			p.stopReason = "tool_use"
		}
	}
	if reply.Usage != nil {
		p.usage = *reply.Usage
	} else {
		p.usage = Usage{InputTokens: max(1, tokens(bodyLen)), OutputTokens: max(1, tokens(outLen))}
	}
	return p
}

// split cuts s into pieces of n runes.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end, count := 0, 0
		for end < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			count++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// sleep waits d, or until ctx is done; it reports whether ctx is still
// live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func requestID(seq int) string { return fmt.Sprintf("req_fake_%04d", seq) }

// faultStatus is the HTTP status a fault answers with.
func faultStatus(format, kind string, f *Fault) int {
	if f.Status != 0 {
		return f.Status
	}
	if kind == FaultOverloaded && format == FormatOpenAI {
		return http.StatusServiceUnavailable
	}
	return faultKinds[kind]
}

// faultMessage is the error message of a fault.
func faultMessage(format, kind string, f *Fault, model string) string {
	if f != nil && f.Message != "" {
		return f.Message
	}
	if format == FormatOpenAI {
		_, _, msg := openAIError(kind, model)
		return msg
	}
	return anthropicErrorMessage(kind, model)
}

// setRetryAfter adds the retry headers a fault asks for.
func setRetryAfter(h http.Header, f *Fault) {
	if f == nil {
		return
	}
	if f.RetryAfterMS > 0 {
		h.Set("retry-after-ms", strconv.Itoa(f.RetryAfterMS))
		if f.RetryAfter == 0 {
			h.Set("retry-after", strconv.Itoa((f.RetryAfterMS+999)/1000))
		}
	}
	if f.RetryAfter > 0 {
		h.Set("retry-after", strconv.Itoa(f.RetryAfter))
	}
}

// writeError answers with an error status and a body in the format of the
// endpoint.
func writeError(w http.ResponseWriter, format string, status int, kind, message string, seq int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("request-id", requestID(seq))
	h.Set("x-request-id", requestID(seq))
	w.WriteHeader(status)
	if format == FormatOpenAI {
		errType, code, _ := openAIError(kind, "")
		_, _ = w.Write(openAIErrorBody(errType, code, message))
		return
	}
	_, _ = w.Write(anthropicErrorBody(anthropicErrorType(kind), message, requestID(seq)))
}

// streamError is the error event a server sends in the middle of a stream.
func streamError(format, kind, message string, seq int) []byte {
	if format == FormatOpenAI {
		errType, code, _ := openAIError(kind, "")
		return append(append([]byte("data: "), openAIErrorBody(errType, code, message)...), '\n', '\n')
	}
	body := anthropicErrorBody(anthropicErrorType(kind), message, requestID(seq))
	return append(append([]byte("event: error\ndata: "), body...), '\n', '\n')
}
