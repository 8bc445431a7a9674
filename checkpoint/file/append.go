package file

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// encodeFrame appends one frame holding events (with consecutive seqs) to dst.
func (s *Store) encodeFrame(dst []byte, events []session.Event) ([]byte, uint32, error) {
	at := len(dst)
	dst = append(dst, make([]byte, frameHeaderLen)...)
	var raw []byte
	if s.enc == encRaw {
		for _, e := range events {
			dst = appendEvent(dst, e)
		}
		raw = dst[at+frameHeaderLen:]
	} else {
		for _, e := range events {
			raw = appendEvent(raw, e)
		}
		enc, err := s.encoder()
		if err != nil {
			return nil, 0, err
		}
		dst = enc.EncodeAll(raw, dst)
	}
	payload := dst[at+frameHeaderLen:]
	if len(raw) > maxFramePayload || len(payload) > maxFramePayload {
		return nil, 0, fmt.Errorf("%w: %d bytes in one append; split it", checkpoint.ErrTooLarge, len(raw))
	}
	hb := dst[at : at+frameHeaderLen]
	copy(hb, frameMagic)
	binary.LittleEndian.PutUint32(hb[8:], uint32(len(payload)))
	hb[12] = s.enc
	binary.LittleEndian.PutUint64(hb[16:], uint64(events[0].Seq))
	binary.LittleEndian.PutUint32(hb[24:], uint32(len(events)))
	binary.LittleEndian.PutUint32(hb[28:], uint32(len(raw)))
	crc := frameCRC(hb, payload)
	binary.LittleEndian.PutUint32(hb[4:], crc)
	return dst, crc, nil
}

// Append appends events to the session's log if its head is expectedHead.
// Concurrent appends to one session share one write and one fsync; each
// still gets its own head check. See checkpoint.Checkpointer.
func (s *Store) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if err := checkID("append", id); err != nil {
		return 0, err
	}
	if s.readOnly {
		return 0, fmt.Errorf("append %s: %w", id, checkpoint.ErrReadOnly)
	}
	evs, err := checkpoint.Prepare(id, expectedHead, events, s.maxEvent)
	if err != nil {
		return 0, err
	}
	req := &appendReq{ctx: ctx, expected: expectedHead, events: evs}
	for i := range evs {
		evs[i].Time = evs[i].Time.UTC()
		req.size += encodedEventSize(evs[i])
	}
	if req.size > maxFramePayload {
		return 0, fmt.Errorf("append %s: %w: %d bytes in one append is over this store's limit of %d; split it", id, checkpoint.ErrTooLarge, req.size, maxFramePayload)
	}
	if expectedHead == 0 {
		var p session.SessionStarted
		if err := json.Unmarshal(evs[0].Data, &p); err != nil {
			return 0, fmt.Errorf("append %s: %w: the session_started event's data is not valid (%v); build it with session.New", id, checkpoint.ErrInvalid, err)
		}
		req.ns, req.folder = p.Namespace, folderFor(p.Namespace)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	h := s.acquire(id)
	defer s.release(h)
	h.group.Submit(req)
	return req.head, req.err
}

// commit runs one group commit: one lock, one head check per request, one
// write and one sync for every request that passed.
func (h *handle) commit(batch []*appendReq) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var live []*appendReq
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
		} else {
			live = append(live, r)
		}
	}
	var create *appendReq
	for _, r := range live {
		if r.expected == 0 {
			create = r
			break
		}
	}
	// Wait for the lock on behalf of the first caller still waiting.
	for len(live) > 0 {
		err := h.open(live[0].ctx, create)
		if err == nil {
			break
		}
		if live[0].ctx.Err() == nil {
			for _, r := range live {
				r.err = fmt.Errorf("append %s: %w", h.id, err)
			}
			return
		}
		live[0].err = live[0].ctx.Err()
		if live[0] == create {
			create = nil
			for _, r := range live[1:] {
				if r.expected == 0 {
					create = r
					break
				}
			}
		}
		live = live[1:]
	}
	if len(live) == 0 {
		return
	}
	if h.f == nil {
		for _, r := range live {
			r.err = &checkpoint.ConflictError{Session: h.id, Expected: r.expected, Actual: 0}
		}
		return
	}
	defer h.unlock()

	head := h.st.head()
	var accepted []*appendReq
	for _, r := range live {
		if r.expected != head {
			r.err = &checkpoint.ConflictError{Session: h.id, Expected: r.expected, Actual: head}
			continue
		}
		accepted = append(accepted, r)
		head += int64(len(r.events))
		r.head = head
	}
	if len(accepted) == 0 {
		// Nothing to add, but the index may not know this state.
		h.report(live[0].ctx) // if it fails, the next writer reports it
		return
	}
	n := h.s.ns(h.folder)
	defer n.maybeCompact(accepted[0].ctx)
	if err := n.acquireShared(accepted[0].ctx); err != nil {
		for _, r := range accepted {
			r.err = fmt.Errorf("append %s: %w", h.id, err)
		}
		return
	}
	defer n.releaseShared()
	if err := n.write(indexRecord{kind: recIntent, id: h.id}); err != nil {
		for _, r := range accepted {
			r.err = fmt.Errorf("append %s: %w", h.id, err)
		}
		return
	}
	h.reported = false
	for len(accepted) > 0 {
		k, bytes := 1, accepted[0].size
		for k < len(accepted) && bytes+accepted[k].size <= softFrameBytes {
			bytes += accepted[k].size
			k++
		}
		if err := h.writeFrame(accepted[:k]); err != nil {
			for _, r := range accepted {
				r.err, r.head = fmt.Errorf("append %s: %w", h.id, err), 0
			}
			break
		}
		accepted = accepted[k:]
	}
	// The log is durable; if the index cannot record it, its intent record
	// makes readers fold the log instead.
	if n.write(indexRecord{kind: recSummary, id: h.id, st: h.st}) == nil {
		h.reported = true
	}
}

// compactEvery is how many index records a process appends between checks
// that the index is not growing without bound.
const compactEvery = 1024

// maybeCompact compacts the index now and then, outside any lock, when it
// has grown well past its size after the last rewrite.
func (n *nsIndex) maybeCompact(ctx context.Context) {
	if w := n.writes.Load(); w < compactEvery || !n.writes.CompareAndSwap(w, 0) {
		return
	}
	_, size, ok, err := statID(n.path)
	if err == nil && ok && size > 1<<20 && size > 4*n.baseSize.Load() {
		n.ensure(ctx) // best effort: a failure here is retried next time
	}
}

// writeFrame writes the events of reqs as one frame after the log's end and
// syncs it. On failure the log is cut back to where it was.
func (h *handle) writeFrame(reqs []*appendReq) error {
	var events []session.Event
	for _, r := range reqs {
		events = append(events, r.events...)
	}
	var buf []byte
	if h.size == 0 {
		buf = append(buf, logMagic...)
	}
	frameOff := h.size + int64(len(buf))
	buf, crc, err := h.s.encodeFrame(buf, events)
	if err != nil {
		return err
	}
	created := h.size == 0
	_, err = h.f.WriteAt(buf, h.size)
	if err == nil {
		err = datasync(h.f)
	}
	if err == nil && created {
		err = syncDir(filepath.Dir(h.path))
	}
	if err != nil {
		// Take the partial frame back out; if that fails too, the next
		// writer finds it as a torn tail and cuts it.
		if h.f.Truncate(h.size) != nil || datasync(h.f) != nil {
			h.loaded = false
		}
		return fmt.Errorf("write %s: %w", h.path, err)
	}
	st := h.st
	st.sum.Open = slices.Clone(st.sum.Open)
	for _, e := range events {
		st.sum.Apply(e)
	}
	st.sum.ID = h.id
	h.size += int64(len(buf))
	st.tok = token{size: h.size, lastOff: frameOff, lastCRC: crc}
	h.st = st
	return nil
}
