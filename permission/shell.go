package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// CommandParts splits a shell command line into the simple commands it
// runs, each as its words (with any leading assignments, and its
// redirections after them) joined by single spaces: those chained with ;, &&, ||, |, those in $(...), `...`,
// subshells, blocks, conditions and loops. Words that expand at run time
// ($VAR, $(...)) are kept as written. Declarations, function definitions
// and other commands that are not simple are returned as written, so that
// only a rule naming them can allow them. An error means the command does
// not parse; callers then match the whole text as one part.
func CommandParts(cmd string) ([]string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, fmt.Errorf("parse command: %w", err)
	}
	var parts []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			call, ok := n.Cmd.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 && len(call.Assigns) == 0 {
				return true
			}
			var words []string
			for _, a := range call.Assigns {
				words = append(words, source(a))
			}
			for _, w := range call.Args {
				words = append(words, wordText(w))
			}
			// Redirections are part of what the command does: a rule
			// for "echo hi" does not cover "echo hi > ~/.bashrc".
			for _, r := range n.Redirs {
				words = append(words, redirText(r))
			}
			parts = append(parts, strings.Join(words, " "))
		case *syntax.DeclClause, *syntax.FuncDecl, *syntax.CoprocClause, *syntax.LetClause:
			parts = append(parts, strings.Join(strings.Fields(source(n)), " "))
		}
		return true
	})
	return parts, nil
}

// wordText is a word with its quotes removed where it is static text, and
// as written where it expands.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				} else {
					b.WriteString(source(q))
				}
			}
		default:
			b.WriteString(source(p))
		}
	}
	return b.String()
}

func source(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.Minify(true)).Print(&b, n); err != nil {
		return fmt.Sprintf("%v", n)
	}
	return strings.TrimSpace(b.String())
}

// redirText is a redirection as written: "2>&1", ">out".
func redirText(r *syntax.Redirect) string {
	s := ""
	if r.N != nil {
		s = r.N.Value
	}
	s += r.Op.String()
	if r.Word != nil {
		s += wordText(r.Word)
	}
	return s
}
