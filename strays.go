package liteagent

import "github.com/lite-agent/lite-agent/session"

// clearStrays removes the temporary files that the interrupted writes of
// the calls in hz (hazards the user just acknowledged) left beside the
// files they were writing: a crash between creating such a file and
// renaming it over its target leaves ".NAME.lite-agent-*.tmp" in the
// workdir. Only files of that exact shape beside a path the call recorded
// are removed (see tool.Root.RemoveStrayTemps); failures are left for the
// doctor to report, they never fail the acknowledgement.
func (s *Session) clearStrays(hz []session.Hazard) {
	var paths []string
	for _, h := range hz {
		paths = append(paths, h.Paths...)
	}
	if len(paths) > 0 {
		s.root.RemoveStrayTemps(paths)
	}
}
