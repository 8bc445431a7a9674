package server

import (
	"context"
	"sync"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
)

// maxCachedInfos bounds the info cache; past it the cache starts over.
const maxCachedInfos = 4096

// infoCache keeps the last Info served per session with the head and
// last-event time it was read at, so a request for a session whose log
// has not moved (the store's head says so) is answered without replaying
// the log. BenchmarkSessionInfo50Clients showed the replay as 40% of the
// CPU of an info request. The liveness lease is asked on every request:
// an Info read while nobody ran the session is not reused once someone
// does, and the other way round.
type infoCache struct {
	mu sync.Mutex
	m  map[string]cachedInfo
}

type cachedInfo struct {
	head    int64
	updated time.Time
	live    bool // a process held the session's lease when it was read
	info    liteagent.Info
}

// info returns session id's Info (see liteagent.Agent.SessionInfo).
func (s *Server) info(ctx context.Context, id string) (*liteagent.Info, error) {
	sum, err := s.store.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	var holder *checkpoint.Holder
	if l, ok := s.store.(checkpoint.Leaser); ok {
		if holder, err = l.LeaseHolder(ctx, id); err != nil {
			holder = nil
		}
	}
	s.infos.mu.Lock()
	c, ok := s.infos.m[id]
	s.infos.mu.Unlock()
	if ok && c.head == sum.Head && c.updated.Equal(sum.Updated) && c.live == (holder != nil) {
		info := c.info // the slices are shared, and only read
		info.Running = holder
		return &info, nil
	}
	info, err := s.agent.SessionInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	s.infos.mu.Lock()
	if s.infos.m == nil || len(s.infos.m) >= maxCachedInfos {
		s.infos.m = map[string]cachedInfo{}
	}
	s.infos.m[id] = cachedInfo{head: info.Head, updated: info.Updated, live: info.Running != nil, info: *info}
	s.infos.mu.Unlock()
	return info, nil
}
