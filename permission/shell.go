package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// CommandParts splits a shell command line into the simple commands it
// runs, each as its words (with any leading assignments) joined by single
// spaces: those chained with ;, &&, ||, |, those in $(...), `...`,
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
		case *syntax.CallExpr:
			if len(n.Args) == 0 && len(n.Assigns) == 0 {
				return true
			}
			var words []string
			for _, a := range n.Assigns {
				words = append(words, source(a))
			}
			for _, w := range n.Args {
				words = append(words, wordText(w))
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
