package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/wsgateway/wsgateway/rank"
)

// stream is a board's frame stream (rank.Stream): the epoch, made with the
// board, and the transitions recorded. Guarded by board.mu.
type stream struct {
	epoch       string
	marks       []rank.Mark // oldest first
	schedule    string
	scheduleSeq int64
}

// MarkStream implements rank.Streams.
func (s *Store) MarkStream(ctx context.Context, id string) (rank.Stream, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return rank.Stream{}, fmt.Errorf("memstore: mark stream %s: %w", id, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return rank.Stream{}, fmt.Errorf("memstore: mark stream %s: %w", id, rank.ErrUnknownBoard)
	}
	now := s.now()
	st := &b.stream
	key := b.cfg.ScheduleKey()
	latest := int64(-1 << 63)
	if n := len(st.marks); n > 0 {
		latest = st.marks[n-1].At
	}
	var add []int64
	for _, tr := range b.cfg.Transitions(now, rank.MarkDepth(b.cfg)) {
		at := tr.At.UnixMilli()
		if at > latest || (key != st.schedule && !marked(st.marks, at)) {
			add = append(add, at)
		}
	}
	if len(add) > 0 || key != st.schedule {
		b.seq++
		for _, at := range add {
			st.marks = append(st.marks, rank.Mark{At: at, Seq: b.seq})
		}
		slices.SortFunc(st.marks, func(x, y rank.Mark) int { return cmp.Compare(x.At, y.At) })
		if key != st.schedule {
			st.schedule, st.scheduleSeq = key, b.seq
		}
	}
	keep := rank.MarkKeep(b.cfg, now)
	st.marks = slices.DeleteFunc(st.marks, func(m rank.Mark) bool { return m.At < keep })
	return rank.Stream{
		Epoch: st.epoch, Seq: b.seq, Marks: slices.Clone(st.marks),
		Schedule: st.schedule, ScheduleSeq: st.scheduleSeq,
	}, nil
}

func marked(ms []rank.Mark, at int64) bool {
	return slices.ContainsFunc(ms, func(m rank.Mark) bool { return m.At == at })
}

// RenewEpoch implements rank.Streams. The memory engine's seq never goes
// back (its data goes with the process), but the rule is the same.
func (s *Store) RenewEpoch(ctx context.Context, id, old string) (string, error) {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return "", fmt.Errorf("memstore: renew epoch %s: %w", id, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return "", fmt.Errorf("memstore: renew epoch %s: %w", id, rank.ErrUnknownBoard)
	}
	if b.stream.epoch == old {
		b.stream.epoch = rank.NewEpoch()
	}
	return b.stream.epoch, nil
}
