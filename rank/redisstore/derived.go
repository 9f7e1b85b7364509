package redisstore

// Derived boards (docs/protocol.md §8, rank/derived.go) and groups.
//
// Groups: a board's keys carry its group as hash tag ("<p>:{b}:…" when the
// group is the id, else "<p>:{g}/b:…"), so a derived board and its sources
// share one Redis Cluster slot. The group of a board whose group is not its
// id is listed in the hash <p>:groups (outside every slot), read once per
// board and cached: it is fixed at creation.
//
// Dependants: a source's cfg hash holds, in field d, its derived boards
// ("<id>:<weight>:<span>:<retain>", comma-joined), changed by deps.lua,
// which also gives the source a new config version: the Go side passes the
// dependants' keys to apply.lua (Cluster wants every key in KEYS), and a
// caller holding an older list is refused as stale and resends with the
// new one. apply.lua adds weight × (new − old) to each view in the event's
// step.
//
// Creation over data: the derived board is stored, registered with its
// sources (from then on apply.lua maintains it), then build.lua recomputes
// every member of the sources, a few at a time (a ZSCAN batch, then short
// scripts): a member recomputed is exact at that step and maintained after
// it, and a member first seen after the scan began got all its entries from
// maintained events. The cfg hash carries b=1 until the build is done; the
// build runs under a lease and saves its position, so a PUT or a node's
// keeper that finds b set once the builder died goes on from there
// (build.go).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// dep is one dependant of a source, as its cfg hash lists it.
type dep struct {
	id     string
	w      int64
	span   int
	retain int
}

func (d dep) String() string {
	return fmt.Sprintf("%s:%d:%d:%d", d.id, d.w, d.span, d.retain)
}

// parseDeps reads a cfg hash's d field; malformed entries are skipped
// (deps.lua writes only well-formed ones).
func parseDeps(s string) []dep {
	var out []dep
	for e := range strings.SplitSeq(s, ",") {
		f := strings.Split(e, ":")
		if len(f) != 4 {
			continue
		}
		w, err1 := strconv.ParseInt(f[1], 10, 64)
		span, err2 := strconv.Atoi(f[2])
		retain, err3 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, dep{f[0], w, span, retain})
	}
	return out
}

func (s *Store) groupsKey() string { return s.cfg.Prefix + ":groups" }

// groupOf reads the group of board (cached: it is fixed at creation).
func (s *Store) groupOfBoard(ctx context.Context, board string) (string, error) {
	s.mu.Lock()
	g, ok := s.groups[board]
	s.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := s.client.HGet(ctx, s.groupsKey(), board).Result()
	if err != nil && !isNil(err) {
		return "", err
	}
	if g == "" {
		g = board
	}
	s.rememberGroup(board, g)
	return g, nil
}

func (s *Store) rememberGroup(board, g string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.groups) >= maxCachedBoards {
		clear(s.groups)
	}
	s.groups[board] = g
}

// resolveDerived checks b against the stored configs (rank.ResolveDerived,
// rank.CheckSourceChange) and returns the config to store. old is the
// stored config, zero when the board is new.
func (s *Store) resolveDerived(ctx context.Context, b rank.Board, old cachedBoard) (rank.Board, error) {
	var getErr error
	b, err := rank.ResolveDerived(b, old.b, func(id string) (rank.Board, []rank.Dep, bool) {
		c, err := s.loadBoard(ctx, id)
		if err != nil {
			if !errors.Is(err, rank.ErrUnknownBoard) && getErr == nil {
				getErr = err
			}
			return rank.Board{}, nil, false
		}
		return c.b, c.depList(), true
	})
	if getErr != nil {
		return rank.Board{}, getErr
	}
	if err != nil {
		return rank.Board{}, err
	}
	if err := rank.CheckSourceChange(old.b, b, old.depList()); err != nil {
		return rank.Board{}, err
	}
	return b, nil
}

// newVersion is a fresh random config version.
func newVersion() string {
	var v [8]byte
	_, _ = rand.Read(v[:])
	return hex.EncodeToString(v[:])
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }

// link registers derived board b with each of its sources.
func (s *Store) link(ctx context.Context, b rank.Board, op string) error {
	src := b.Source
	for i, id := range src.Boards() {
		d := dep{id: b.ID, w: src.Weights()[i], span: src.Span(), retain: b.Retained()}
		_, err := s.deps.run(ctx, s.client, []string{s.keyIn(b.GroupID(), id, "cfg")}, "", "", 0, 0, 0, op, b.ID, d.String(), newVersion())
		if err != nil {
			return err
		}
		s.forget(id)
	}
	return nil
}

// unlinkAll takes a derived board out of its sources' lists before its
// keys go; a source that is gone is skipped.
func (s *Store) unlinkAll(ctx context.Context, b rank.Board) error {
	err := s.link(ctx, b, "remove")
	if err != nil && scriptError(err) == "unknown_board" {
		return nil
	}
	return err
}

// keptPeriods are the periods ban.lua moves a member's entries in: those
// of rank.KeptPeriods, and a window's upcoming views.
func keptPeriods(b rank.Board, now time.Time) []int64 {
	out := rank.KeptPeriods(b, now)
	if b.Source.Kind != rank.Window || b.Reset == rank.None {
		return out
	}
	next := rank.PeriodAt(b, rank.PeriodAt(b, now).End)
	for _, v := range rank.ViewPeriods(b, next, b.Source.Periods)[1:] {
		out = append(out, v.Index)
	}
	return out
}

// depKeys are apply.lua's keys and arguments for the dependants of source
// c at slots sl (see the block "derived boards" of its header).
func (s *Store) depKeys(c cachedBoard, sl slots) ([]string, []any) {
	if len(c.deps) == 0 {
		return nil, []any{0, 0}
	}
	var p rank.Period
	if c.b.Reset != rank.None {
		p, _ = rank.PeriodOf(c.b, sl.p, time.UnixMilli(sl.start), 2)
	}
	return s.depKeysFrom(c, p)
}

// depKeysFrom is depKeys with slot P's period p given (an import into a
// past period puts it there, §18).
func (s *Store) depKeysFrom(c cachedBoard, p rank.Period) ([]string, []any) {
	if len(c.deps) == 0 {
		return nil, []any{0, 0}
	}
	g := c.b.GroupID()
	var keys []string
	var args []any
	for _, d := range c.deps {
		V := d.span + 2
		views := make([]rank.Period, 0, V)
		if c.b.Reset == rank.None {
			for range V {
				views = append(views, rank.Period{})
			}
		} else {
			views = rank.ViewPeriods(c.b, p, V)
		}
		keys = append(keys, s.keyIn(g, d.id, "seq"), s.keyIn(g, d.id, "n"), s.keyIn(g, d.id, "ban"))
		for _, v := range views {
			keys = append(keys, s.keyIn(g, d.id, "z:"+strconv.FormatInt(v.Index, 10)))
		}
		for _, v := range views {
			keys = append(keys, s.keyIn(g, d.id, "x:"+strconv.FormatInt(v.Index, 10)))
		}
		args = append(args, d.w, d.span)
		for _, v := range views {
			args = append(args, ms(v.ExpireAt(d.retain)))
		}
	}
	return keys, append(args, len(args), len(keys))
}

// checkNoDeps refuses an operation that would take entries out of a source
// behind its dependants' back.
func (s *Store) checkNoDeps(ctx context.Context, op, board string) error {
	c, err := s.loadBoard(ctx, board)
	if err != nil {
		return s.fail(op, board, err)
	}
	if len(c.deps) > 0 {
		return fmt.Errorf("redisstore: %s %s: %w (%s): delete those first", op, board, rank.ErrHasDependants, c.deps[0].id)
	}
	return nil
}

// depList is c's dependants as rank.Deps.
func (c *cachedBoard) depList() []rank.Dep {
	var out []rank.Dep
	for _, d := range c.deps {
		out = append(out, rank.Dep{Board: d.id, Weight: d.w, Span: d.span})
	}
	return out
}
