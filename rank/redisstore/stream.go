package redisstore

// Board streams (§15): the epoch, kept in the board's cfg hash, and the
// transitions of its schedule recorded in <p>:{b}:mk (stream.lua).

import (
	"context"
	"fmt"
	"strconv"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/lua"
)

// streamScript is stream.lua; immutable once built.
var streamScript = newScript(lua.Stream)

// MarkStream implements rank.Streams.
func (s *Store) MarkStream(ctx context.Context, board string) (rank.Stream, error) {
	v, err := s.stream(ctx, "mark stream", board, func(b rank.Board) []any {
		at := s.clock.now(ctx, s.client)
		if s.cfg.Now != nil {
			at = s.cfg.Now()
		}
		trs := b.Transitions(at, rank.MarkDepth(b))
		args := make([]any, 0, 3+len(trs))
		args = append(args, b.ScheduleKey(), rank.MarkKeep(b, at))
		for _, tr := range trs {
			args = append(args, tr.At.UnixMilli())
		}
		return args
	})
	if err != nil {
		return rank.Stream{}, err
	}
	st, err := parseStream(v)
	if err != nil {
		return rank.Stream{}, fmt.Errorf("redisstore: mark stream %s: %w", board, err)
	}
	return st, nil
}

// RenewEpoch implements rank.Streams.
func (s *Store) RenewEpoch(ctx context.Context, board, old string) (string, error) {
	v, err := s.stream(ctx, "renew epoch", board, func(rank.Board) []any { return []any{old} })
	if err != nil {
		return "", err
	}
	e, _ := v.(string)
	return e, nil
}

// stream runs stream.lua's op on board, again after a stale config; args
// gives the op's arguments after ARGV[4] for the config in hand.
func (s *Store) stream(ctx context.Context, op, board string, args func(b rank.Board) []any) (any, error) {
	if !rank.ValidBoardID(board) {
		return nil, fmt.Errorf("redisstore: %s %q: %w", op, board, rank.ErrInvalidBoard)
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	name := "mark"
	if op == "renew epoch" {
		name = "renew"
	}
	for attempt := 0; ; attempt++ {
		c, err := s.board(ctx, board)
		if err != nil {
			return nil, s.fail(op, board, err)
		}
		argv := append([]any{c.ver, s.nowArg(), name, rank.NewEpoch()}, args(c.b)...)
		keys := []string{s.key(&c.b, "cfg"), s.key(&c.b, "seq"), s.key(&c.b, "n"), s.key(&c.b, "mk")}
		v, err := streamScript.run(ctx, s.client, keys, argv...)
		if err != nil {
			if attempt < staleRetries && scriptError(err) == "stale" {
				s.forget(board)
				continue
			}
			if scriptError(err) == "unknown_board" {
				s.forget(board)
			}
			return nil, s.fail(op, board, err)
		}
		return v, nil
	}
}

// parseStream decodes stream.lua's mark reply.
func parseStream(v any) (rank.Stream, error) {
	r, ok := v.([]any)
	if !ok || len(r) < 4 || len(r)%2 != 0 {
		return rank.Stream{}, fmt.Errorf("stream reply of unexpected shape %T", v)
	}
	var st rank.Stream
	st.Epoch, _ = r[0].(string)
	st.Seq, _ = r[1].(int64)
	st.Schedule, _ = r[2].(string)
	st.ScheduleSeq, _ = r[3].(int64)
	for i := 4; i < len(r); i += 2 {
		f, _ := r[i].(string)
		at, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return rank.Stream{}, fmt.Errorf("stream mark %q: %w", f, err)
		}
		seq, _ := r[i+1].(int64)
		st.Marks = append(st.Marks, rank.Mark{At: at, Seq: seq})
	}
	return st, nil
}
