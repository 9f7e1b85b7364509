package bus

import (
	"encoding/json"
)

// ProfileEvent says the profiles of Members changed (written or deleted):
// every node drops its cached copies and re-sends the frames that show
// them (R20). Payload of <prefix>.profiles, JSON.
type ProfileEvent struct {
	Members []string `json:"members"`
}

const (
	// maxProfilesPending bounds the member ids queued for publishing; past
	// it the oldest is dropped and every node resyncs everything (a lost
	// profile change leaves no per-board trace to resync by).
	maxProfilesPending = 4096
	// maxProfileBatch bounds the ids in one message (≤ 64 bytes each).
	maxProfileBatch = 1024
)

// PublishProfiles queues member ids whose profiles changed, for every
// other node. It never blocks: past maxProfilesPending queued ids the
// oldest is dropped, counted, and every node is told to resync everything.
func (b *Bus) PublishProfiles(members []string) {
	if len(members) == 0 {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	var lost int64
	for _, m := range members {
		if _, l := b.profiles.push(m); l {
			lost++
		}
	}
	if lost > 0 {
		b.markResyncLocked("")
	}
	b.mu.Unlock()
	if lost > 0 {
		b.dropped.Add(lost)
	}
	b.poke()
}

// flushProfiles publishes the queued ids in messages of maxProfileBatch.
// A failed publish resyncs everything, as a dropped id does. Called by the
// publisher goroutine only.
func (b *Bus) flushProfiles(p *publisher) int {
	b.mu.Lock()
	p.profiles = b.profiles.drainTo(p.profiles[:0])
	b.mu.Unlock()
	ids := p.profiles
	for len(ids) > 0 {
		part := ids[:min(maxProfileBatch, len(ids))]
		ids = ids[len(part):]
		data, _ := json.Marshal(ProfileEvent{Members: part}) // strings cannot fail
		if err := b.nc.Publish(b.subjProfs, data); err != nil {
			b.publishFailed("", len(part), err)
		}
	}
	n := len(p.profiles)
	clear(p.profiles)
	return n
}

// receiveProfiles delivers one ProfileEvent; a payload it cannot read
// resyncs everything.
func (b *Bus) receiveProfiles(data []byte) {
	var e ProfileEvent
	if err := json.Unmarshal(data, &e); err != nil || len(e.Members) == 0 {
		b.log.Warn("bus: bad profile event; resyncing every board", "err", err)
		b.callResync("")
		return
	}
	if b.cfg.OnProfiles != nil {
		b.cfg.OnProfiles(e)
	}
}
