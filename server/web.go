package server

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// The viewer: server-rendered pages (html/template) and one script that
// follows the session's stream, all embedded so the Go binary needs no
// build step.
//
//go:embed web
var webFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"when":      func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"difflines": diffLines,
	"short": func(id string) string {
		if len(id) > 12 {
			return id[:12]
		}
		return id
	},
}).ParseFS(webFS, "web/*.html"))

// csp lets pages load their own script and style only, and be framed by
// nobody.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		s.log.Warn("render a page", "page", name, "error", err)
	}
}

// pageError shows an error as a page.
func (s *Server) pageError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	if errors.Is(err, checkpoint.ErrNotFound) {
		status = http.StatusNotFound
	}
	s.render(w, status, "error.html", map[string]any{"Status": status, "Error": err.Error()})
}

// listPage is the sessions list.
type listPage struct {
	Query    string
	Sessions []summaryJSON
	Hits     []checkpoint.Hit
	Error    string
	HasModel bool
}

func (s *Server) pageList(w http.ResponseWriter, r *http.Request) {
	p := listPage{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	if p.Query != "" {
		hits, err := s.agent.SearchSessions(r.Context(), p.Query, &liteagent.SearchOptions{})
		if err != nil {
			p.Error = err.Error()
		}
		p.Hits = hits
	} else {
		list, err := s.agent.ListSessions(r.Context())
		if err != nil {
			s.pageError(w, err)
			return
		}
		running := map[string]bool{}
		for _, id := range s.Running() {
			running[id] = true
		}
		for _, sum := range list {
			p.Sessions = append(p.Sessions, summaryJSON{Summary: sum, Hazards: sum.Hazards(), Running: running[sum.ID]})
		}
	}
	s.render(w, http.StatusOK, "list.html", p)
}

// sessionPage is one session.
type sessionPage struct {
	ID       string
	Info     *liteagent.Info
	Timeline *timeline
	Pending  []Pending
	Running  bool
}

func (s *Server) pageSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	info, err := s.agent.SessionInfo(r.Context(), id)
	if err != nil {
		s.pageError(w, err)
		return
	}
	tl, err := s.buildTimeline(r.Context(), id)
	if err != nil {
		s.pageError(w, err)
		return
	}
	running := info.Status == session.StatusRunning
	pending, err := s.approvals.PendingIn(r.Context(), s.store, id)
	if err != nil {
		s.pageError(w, err)
		return
	}
	s.render(w, http.StatusOK, "session.html", sessionPage{ID: id, Info: info, Timeline: tl, Pending: pending, Running: running})
}

func (s *Server) pageTimeline(w http.ResponseWriter, r *http.Request) {
	tl, err := s.buildTimeline(r.Context(), r.PathValue("id"))
	if err != nil {
		s.pageError(w, err)
		return
	}
	s.render(w, http.StatusOK, "timeline.html", map[string]any{"ID": r.PathValue("id"), "Timeline": tl})
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(webFS, "web/"+name)
	if err != nil || strings.HasSuffix(name, ".html") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// diffLine is a line of a diff as the timeline colours it.
type diffLine struct{ Class, Text string }

func diffLines(unified string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(unified, "\n"), "\n") {
		class := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			class = "file"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		}
		out = append(out, diffLine{class, l})
	}
	return out
}
