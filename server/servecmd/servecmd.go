// Package servecmd plugs package server into the command line as
// `lite-agent serve`. It is linked into lite-agent-serve only: package
// server's html/template would make every other command larger and slower
// to start (see cli.Serving).
package servecmd

import (
	"context"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/cli"
	"github.com/lite-agent/lite-agent/server"
)

// New returns the server maker cli.Linked.Serving takes.
func New() cli.Serving { return serving{server.NewApprovals()} }

// serving adapts package server to cli.Serving: the approvals the agent is
// built with are the ones the server answers over HTTP.
type serving struct{ approvals *server.Approvals }

func (s serving) Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	return s.approvals.Approve(ctx, req)
}

func (s serving) Input(ctx context.Context, req liteagent.InputRequest) (string, error) {
	return s.approvals.Input(ctx, req)
}

func (s serving) Serve(agent *liteagent.Agent, o cli.ServeOptions) (cli.Server, error) {
	srv, err := server.New(agent, &server.Options{Store: o.Store, Approvals: s.approvals, Token: o.Token,
		AllowedHosts: o.AllowedHosts, CORSOrigins: o.CORSOrigins, MaxBodyBytes: o.MaxBodyBytes, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return handler{srv}, nil
}

// handler is a *server.Server whose Shutdown drops the turn ends it
// returns (the server logs them).
type handler struct{ *server.Server }

func (h handler) Shutdown(ctx context.Context) { h.Server.Shutdown(ctx) }
