package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/tool"
)

// maxOutput caps what one call returns to the model.
const maxOutput = 100 << 10

// remoteTool is one tool of a server, as the agent calls it.
type remoteTool struct {
	srv  *server
	name string // the server's own name for it
	spec tool.Spec
}

var _ tool.Tool = (*remoteTool)(nil)

func newRemoteTool(srv *server, t *sdk.Tool) *remoteTool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil || string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	desc = fmt.Sprintf("%s (tool %q of the MCP server %q)", strings.TrimSpace(desc), t.Name, srv.cfg.Name)
	return &remoteTool{srv: srv, name: t.Name, spec: tool.Spec{
		Name:        ToolName(srv.cfg.Name, t.Name),
		Description: strings.TrimSpace(desc),
		InputSchema: schema,
		Kind:        tool.KindMCP,
		Server:      srv.cfg.Name,
		ReadOnly:    t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}}
}

func (t *remoteTool) Spec() tool.Spec { return t.spec }

// Run calls the tool on its server. Cancelling ctx makes the SDK send
// notifications/cancelled for the request.
func (t *remoteTool) Run(ctx context.Context, call tool.Call) tool.Result {
	cs := t.srv.session()
	if cs == nil {
		return tool.Errorf("The MCP tool %s could not be called: %v", t.spec.Name, t.srv.unavailable())
	}
	args := json.RawMessage(call.Input)
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	callCtx := ctx
	if d := t.srv.cfg.Timeout; d > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	res, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		if ctx.Err() == nil && callCtx.Err() != nil {
			return tool.Result{Output: fmt.Sprintf("The MCP server %q did not answer the call of %q within its timeout (%s); it was told to cancel it, but what it did meanwhile is unknown.", t.srv.cfg.Name, t.name, t.srv.cfg.Timeout), IsError: true, Untracked: !t.spec.ReadOnly}
		}
		if ctx.Err() != nil {
			return tool.Result{Output: "The call was cancelled; the MCP server was told so.", IsError: true, Untracked: !t.spec.ReadOnly}
		}
		return tool.Result{Output: fmt.Sprintf("The MCP server %q failed the call of %q: %v", t.srv.cfg.Name, t.name, err), IsError: true, Untracked: !t.spec.ReadOnly}
	}
	out, images := formatResult(res.Content, res.StructuredContent)
	return tool.Result{Output: out, Images: images, IsError: res.IsError, Untracked: !t.spec.ReadOnly}
}

// Images the model APIs take: these types, up to maxImage bytes each,
// maxImages per result. Others are described in the text.
const (
	maxImage  = 5 << 20
	maxImages = 8
)

var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// formatResult renders a tool result as the text the model reads and the
// images passed beside it. Structured content is added as JSON unless a
// text block already holds it.
func formatResult(content []sdk.Content, structured any) (string, []tool.Image) {
	var parts []string
	var images []tool.Image
	for _, c := range content {
		if im, ok := c.(*sdk.ImageContent); ok && slices.Contains(imageTypes, im.MIMEType) && len(im.Data) <= maxImage && len(images) < maxImages {
			images = append(images, tool.Image{MediaType: im.MIMEType, Data: im.Data})
			parts = append(parts, fmt.Sprintf("[image %d, %s, %d bytes: attached]", len(images), im.MIMEType, len(im.Data)))
			continue
		}
		parts = append(parts, formatContent(c))
	}
	if structured != nil {
		js, err := json.Marshal(structured)
		if err == nil && !hasJSON(parts, js) {
			parts = append(parts, "structured content: "+string(js))
		}
	}
	out := strings.Join(parts, "\n")
	if len(out) > maxOutput {
		out = out[:maxOutput] + fmt.Sprintf("\n[output cut at %d KiB]", maxOutput>>10)
	}
	return out, images
}

func hasJSON(parts []string, js []byte) bool {
	for _, p := range parts {
		var b bytes.Buffer
		if json.Compact(&b, []byte(p)) == nil && bytes.Equal(b.Bytes(), js) {
			return true
		}
	}
	return false
}

func formatContent(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[an image, %s, %d bytes: not shown (the model takes PNG, JPEG, GIF and WebP images up to %d MiB, %d a result)]", c.MIMEType, len(c.Data), maxImage>>20, maxImages)
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio, %s, %d bytes: not shown, lite-agent passes tool results to the model as text]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource %s (%s); read it with mcp_read_resource]", c.URI, c.Name)
	case *sdk.EmbeddedResource:
		if c.Resource == nil {
			return "[an empty embedded resource]"
		}
		return formatResourceContents(c.Resource)
	}
	return fmt.Sprintf("[content of type %T, not shown]", c)
}

func formatResourceContents(r *sdk.ResourceContents) string {
	if r.Blob != nil {
		return fmt.Sprintf("[resource %s, %s, %d bytes of binary data: not shown]", r.URI, r.MIMEType, len(r.Blob))
	}
	return fmt.Sprintf("resource %s:\n%s", r.URI, r.Text)
}

// resourceTool lists and reads the resources of every server that offers
// them.
type resourceTool struct{ set *Set }

// ResourceToolName is the name of the tool that reads MCP resources.
const ResourceToolName = "mcp_read_resource"

func (*resourceTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        ResourceToolName,
		Description: "List or read the resources of the MCP servers. Without uri, lists the resources of server (or of every server). With uri, reads that resource from server (server may be left out when only one server offers resources).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"the MCP server's name"},"uri":{"type":"string","description":"the resource's URI, as listed"}}}`),
		Kind:        tool.KindRead,
	}
}

func (r *resourceTool) Run(ctx context.Context, call tool.Call) tool.Result {
	var in struct{ Server, URI string }
	if len(bytes.TrimSpace(call.Input)) > 0 {
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return tool.Errorf("mcp_read_resource takes {\"server\": NAME, \"uri\": URI}: %v", err)
		}
	}
	var srvs []*server
	for _, s := range r.set.servers {
		s.mu.Lock()
		if s.cs != nil && s.resources && (in.Server == "" || in.Server == s.cfg.Name) {
			srvs = append(srvs, s)
		}
		s.mu.Unlock()
	}
	switch {
	case len(srvs) == 0 && in.Server != "":
		return tool.Errorf("No running MCP server %q offers resources.", in.Server)
	case len(srvs) == 0:
		return tool.Errorf("No running MCP server offers resources.")
	case in.URI != "" && len(srvs) > 1:
		return tool.Errorf("Several MCP servers offer resources; name the one to read %s from with \"server\".", in.URI)
	case in.URI != "":
		return readResource(ctx, srvs[0], in.URI)
	}
	var b strings.Builder
	for _, s := range srvs {
		if err := listResources(ctx, s, &b); err != nil {
			return tool.Errorf("%v", err)
		}
	}
	return tool.Result{Output: strings.TrimSpace(b.String())}
}

func readResource(ctx context.Context, s *server, uri string) tool.Result {
	cs := s.session()
	if cs == nil {
		return tool.Errorf("%v", s.unavailable())
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return tool.Errorf("The MCP server %q could not read %s: %v", s.cfg.Name, uri, err)
	}
	var parts []string
	for _, c := range res.Contents {
		parts = append(parts, formatResourceContents(c))
	}
	return tool.Result{Output: strings.Join(parts, "\n")}
}

func listResources(ctx context.Context, s *server, b *strings.Builder) error {
	cs := s.session()
	if cs == nil {
		return s.unavailable()
	}
	fmt.Fprintf(b, "MCP server %s:\n", s.cfg.Name)
	n := 0
	for res, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp server %q: list its resources: %w", s.cfg.Name, err)
		}
		if n++; n > 200 {
			b.WriteString("  … more resources not listed\n")
			break
		}
		fmt.Fprintf(b, "  %s  %s %s\n", res.URI, res.Name, oneLine(res.Description))
	}
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			break // templates are optional
		}
		fmt.Fprintf(b, "  template %s  %s %s\n", t.URITemplate, t.Name, oneLine(t.Description))
	}
	return nil
}
