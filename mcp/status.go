package mcp

import (
	"fmt"
	"io"
	"strings"
)

// WriteStatus writes the servers' status as clients show it (one line per
// server, then its tools, prompts and resources, or its error) and returns
// how many failed.
func WriteStatus(w io.Writer, servers []ServerStatus) (failed int) {
	for _, st := range servers {
		how := st.Transport
		if st.PID != 0 && st.State == StateReady {
			how += fmt.Sprintf(", pid %d", st.PID)
		}
		if how != "" {
			how += "; "
		}
		fmt.Fprintf(w, "%s: %s (%s%s)\n", st.Name, st.State, how, st.Target)
		if st.Err != nil {
			failed++
			fmt.Fprintf(w, "  error: %s\n", oneLine(st.Err.Error()))
			continue
		}
		tools := "none"
		if len(st.Tools) > 0 {
			tools = strings.Join(st.Tools, ", ")
		}
		fmt.Fprintf(w, "  tools: %s\n", tools)
		if len(st.Prompts) > 0 {
			fmt.Fprintf(w, "  prompts: /%s\n", strings.Join(st.Prompts, ", /"))
		}
		if st.Resources {
			fmt.Fprintf(w, "  resources: yes (the model reads them with %s)\n", ResourceToolName)
		}
	}
	return failed
}
