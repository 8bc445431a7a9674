package server

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// CookieName is the cookie the viewer's one-time link sets: HttpOnly,
// SameSite=Strict, holding the token.
const CookieName = "lite_agent_token"

// guard wraps the routes with the checks every request passes, in order:
// the Host header (DNS rebinding), the Origin (CSRF; CORS preflights of
// configured origins are answered here), the token, and the body cap.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, "bad_host", "the Host header "+quote(r.Host)+" is not an address of this server: reach it by 127.0.0.1, localhost or ::1 (or start it with the host allowed)", nil)
			return
		}
		origin := r.Header.Get("Origin")
		cors := origin != "" && slices.Contains(s.opts.CORSOrigins, origin)
		if origin != "" && !cors && !sameOrigin(origin, r.Host) {
			writeError(w, http.StatusForbidden, "bad_origin", "requests from origin "+quote(origin)+" are refused: the viewer and API take requests from their own origin only (configure CORS origins to allow another)", nil)
			return
		}
		if !cors {
			// The standard library's check of Sec-Fetch-Site, for
			// state-changing requests that carry no Origin.
			if err := s.crossOrigin.Check(r); err != nil {
				writeError(w, http.StatusForbidden, "bad_origin", "cross-site requests are refused: "+err.Error(), nil)
				return
			}
		}
		if cors {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if !s.authorized(w, r) {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// authorized checks the token: the Authorization header, the cookie, or,
// for a page of the viewer, a ?token= link, which sets the cookie and
// redirects to the same page without it (so the token leaves the address
// bar and the history).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if ok && s.tokenOK(tok) {
			return true
		}
		writeError(w, http.StatusUnauthorized, "bad_token", "the bearer token is wrong: use the token the server printed when it started", nil)
		return false
	}
	if c, err := r.Cookie(CookieName); err == nil && s.tokenOK(c.Value) {
		return true
	}
	if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
		if !s.tokenOK(tok) {
			writeError(w, http.StatusUnauthorized, "bad_token", "the token in this link is wrong: open the link the server printed when it started", nil)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		q := r.URL.Query()
		q.Del("token")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="lite-agent"`)
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.Header.Get("Accept"), "text/html") {
		s.render(w, http.StatusUnauthorized, "error.html", map[string]any{"Status": http.StatusUnauthorized,
			"Error": "This viewer needs its token: open the viewer: link lite-agent serve printed when it started (it sets a cookie, then this page works)."})
		return false
	}
	writeError(w, http.StatusUnauthorized, "no_token", "this server needs its token: send Authorization: Bearer TOKEN, or open the link it printed when it started", nil)
	return false
}

func (s *Server) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
}

// hostAllowed reports whether a Host header names this server: a loopback
// address or localhost, or one of Options.AllowedHosts.
func (s *Server) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if strings.EqualFold(name, "localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether origin is this server's own, as the browser
// reached it (Host has been checked already).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

func quote(s string) string { return "\"" + s + "\"" }
