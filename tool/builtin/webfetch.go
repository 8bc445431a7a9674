package builtin

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html/charset"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed webfetch.md
var webFetchDescription string

const webFetchSchema = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The http:// or https:// URL to fetch."}
  },
  "required": ["url"],
  "additionalProperties": false
}`

// Defaults of WebFetch.
const (
	// DefaultFetchBytes is how much of a response body web_fetch reads.
	DefaultFetchBytes = 5 << 20
	// DefaultFetchTimeout is how long one fetch, body included, may take.
	DefaultFetchTimeout = 30 * time.Second
	// fetchShown is how many bytes of text a fetch returns to the model.
	fetchShown = 100 << 10
	// fetchRedirects is how many redirects one fetch follows.
	fetchRedirects = 10
)

// WebFetch fetches a URL with an HTTP GET and returns it as text: HTML
// converted to Markdown (github.com/JohannesKaufmann/html-to-markdown),
// other text as it is, binary content refused. Its kind is network, so a
// call is approved like any other (the user, or a rule such as
// web_fetch(domain:go.dev)). The zero value is ready to use.
type WebFetch struct {
	// MaxBytes caps the body read: a response that says it is longer is
	// refused unread, one that turns out longer is cut. 0 means
	// DefaultFetchBytes.
	MaxBytes int64
	// Timeout caps one fetch, from the request to the last byte of the
	// body. 0 means DefaultFetchTimeout.
	Timeout time.Duration
	// Redirect decides whether a redirect from one URL to the next is
	// followed: nil follows it to the same host and port only; an error
	// says why not, and the model is given the new URL to fetch itself
	// (which is approved as any call). The command line checks redirects
	// against the permission rules here.
	Redirect func(from, to *url.URL) error
	// Transport makes the requests; nil is http.DefaultTransport.
	Transport http.RoundTripper
}

type webFetchInput struct {
	URL string `json:"url"`
}

// Spec implements tool.Tool.
func (WebFetch) Spec() tool.Spec {
	return tool.Spec{Name: "web_fetch", Description: webFetchDescription, InputSchema: json.RawMessage(webFetchSchema), Kind: tool.KindNetwork}
}

// FetchURL returns the URL a web_fetch input names, "" if it names none:
// what approvals show and permission rules match.
func FetchURL(input json.RawMessage) string {
	var in webFetchInput
	if decode(input, &in) != nil {
		return ""
	}
	return strings.TrimSpace(in.URL)
}

// redirectError is a redirect the policy did not follow.
type redirectError struct {
	to  *url.URL
	why error
}

func (e *redirectError) Error() string { return "redirect to " + e.to.String() + ": " + e.why.Error() }

// Run implements tool.Tool.
func (w WebFetch) Run(ctx context.Context, call tool.Call) tool.Result {
	var in webFetchInput
	if err := decode(call.Input, &in); err != nil {
		return tool.Errorf("%s", err)
	}
	u, err := parseFetchURL(in.URL)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	max := w.MaxBytes
	if max <= 0 {
		max = DefaultFetchBytes
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Transport: w.Transport, CheckRedirect: w.checkRedirect}
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Errorf("cannot fetch %s: %v", u, err)
	}
	req.Header.Set("User-Agent", "lite-agent web_fetch")
	req.Header.Set("Accept", "text/html, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return w.fetchError(ctx, u, timeout, err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	if resp.ContentLength > max {
		return tool.Errorf("%s is %s, over web_fetch's limit of %s; nothing was read. Look for a smaller page (a section, a raw file, an API) or ask the user", final, humanSize(resp.ContentLength), humanSize(max))
	}
	ctype := resp.Header.Get("Content-Type")
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return w.fetchError(ctx, final, timeout, err)
	}
	cut := int64(len(data)) > max
	if cut {
		data = data[:max]
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	if mt == "" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(data))
		ctype = mt
	}
	if !textual(mt) {
		return tool.Errorf("%s is %s (%s), which is not text: web_fetch returns HTML pages and text only", final, mt, humanSize(int64(len(data))))
	}
	text, err := decodeText(data, ctype)
	if err != nil {
		return tool.Errorf("%s: %v", final, err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "fetched %s (HTTP %d, %s, %s", final, resp.StatusCode, mt, humanSize(int64(len(data))))
	if final.String() != u.String() {
		fmt.Fprintf(&out, ", redirected from %s", u)
	}
	out.WriteString(")\n")
	if cut {
		fmt.Fprintf(&out, "[the response is longer than %s: only its first %s were read]\n", humanSize(max), humanSize(max))
	}
	if mt == "text/html" || mt == "application/xhtml+xml" {
		md, err := htmltomarkdown.ConvertString(text, converter.WithDomain(final.Scheme+"://"+final.Host), converter.WithContext(fctx))
		if err != nil {
			return tool.Errorf("%s: cannot convert its HTML to Markdown: %v", final, err)
		}
		text = md
	}
	text = strings.TrimSpace(text)
	if len(text) > fetchShown {
		n := fetchShown
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n] + fmt.Sprintf("\n[cut: showing the first %s of %s of text]", humanSize(int64(n)), humanSize(int64(len(text))))
	}
	out.WriteString("\n" + text + "\n")
	if resp.StatusCode >= 400 {
		return tool.Result{Output: fmt.Sprintf("%s answered HTTP %s\n%s", final, resp.Status, out.String()), IsError: true}
	}
	return tool.Result{Output: out.String()}
}

// parseFetchURL checks a URL from the model; the error is worded for it.
func parseFetchURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("url is empty: give the full http:// or https:// address to fetch")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL; web_fetch fetches web pages only (read files with read)", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q names no host", raw)
	}
	u.Fragment = ""
	return u, nil
}

// checkRedirect is the client's redirect policy: w.Redirect, or the same
// host and port only.
func (w WebFetch) checkRedirect(req *http.Request, via []*http.Request) error {
	from := via[len(via)-1].URL
	if len(via) >= fetchRedirects {
		return &redirectError{to: req.URL, why: fmt.Errorf("more than %d redirects", fetchRedirects)}
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return &redirectError{to: req.URL, why: errors.New("not an http:// or https:// URL")}
	}
	var err error
	if w.Redirect != nil {
		err = w.Redirect(from, req.URL)
	} else if !strings.EqualFold(from.Host, req.URL.Host) {
		err = errors.New("it is another host, and web_fetch follows redirects to the same host only")
	}
	if err != nil {
		return &redirectError{to: req.URL, why: err}
	}
	return nil
}

// fetchError words a failed request for the model: a redirect not
// followed, the time cap, the user's cancel, or the network's error.
func (w WebFetch) fetchError(ctx context.Context, u *url.URL, timeout time.Duration, err error) tool.Result {
	var re *redirectError
	switch {
	case errors.As(err, &re):
		return tool.Errorf("%s redirects to %s, which web_fetch did not follow: %v. To read it, call web_fetch with that URL (it is approved like any other)", u, re.to, re.why)
	case ctx.Err() != nil:
		return tool.Errorf("web_fetch of %s cancelled", u)
	case errors.Is(err, context.DeadlineExceeded):
		return tool.Errorf("fetching %s took longer than %s and was stopped; the server is slow or the page too large: try again later or another page", u, timeout)
	}
	return tool.Errorf("cannot fetch %s: %v", u, err)
}

// textual reports whether a media type is text web_fetch returns.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/x-yaml", "application/yaml", "application/toml",
		"application/x-sh", "application/x-ndjson", "application/graphql", "application/sql":
		return true
	}
	return false
}

// decodeText turns a text body into UTF-8 by the charset its content type
// or its HTML names (golang.org/x/net/html/charset), refusing what is not
// text after all.
func decodeText(data []byte, ctype string) (string, error) {
	if !utf8.Valid(data) {
		r, err := charset.NewReader(bytes.NewReader(data), ctype)
		if err == nil {
			if b, err := io.ReadAll(r); err == nil {
				data = b
			}
		}
	}
	head := data[:min(len(data), sniffLen)]
	if why := binaryReason(head, len(head) == len(data)); why != "" {
		return "", fmt.Errorf("its content is not text (%s); web_fetch returns HTML pages and text only", why)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), nil
}
