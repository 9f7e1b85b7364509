package ranktest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func testBoards(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()

	// b is created first so that sorting is the store's work, not creation order.
	b := put(t, s, board("rt-boards-b", func(b *rank.Board) {
		b.Title = "Run hero ✓"
		b.Order = rank.Asc
		b.Mode = rank.Best
		b.Tiebreak = rank.Shared
		b.Reset = rank.Daily
		b.TZ = "Europe/Berlin"
		b.Top = 25
		b.MaxDelta = 1000
		b.ClientWrites = false
		b.Public = true
		b.IdempotencyWindow = rank.Duration(90 * time.Second)
	}))
	a := put(t, s, rank.DefaultBoard("rt-boards-a"))
	for _, want := range []rank.Board{a, b} {
		got, err := s.GetBoard(ctx, want.ID)
		if err != nil || got != want {
			t.Fatalf("GetBoard(%s) = %+v, %v; want %+v", want.ID, got, err, want)
		}
	}
	list := func() []string {
		t.Helper()
		bs, err := s.Boards(ctx)
		if err != nil {
			t.Fatalf("Boards: %v", err)
		}
		var out []string
		for _, x := range bs {
			if strings.HasPrefix(x.ID, "rt-boards-") {
				out = append(out, x.ID)
				if x.ID == b.ID && x != b {
					t.Fatalf("Boards lists %+v, want %+v", x, b)
				}
			}
		}
		return out
	}
	if got := strings.Join(list(), ","); got != "rt-boards-a,rt-boards-b" {
		t.Fatalf("Boards = %s, want rt-boards-a,rt-boards-b sorted", got)
	}

	// Replacing a config keeps the board's data.
	var g ids
	apply(t, s, delta(a.ID, g.next(), "m1", 5))
	a2 := a
	a2.Title = "renamed"
	a2.Top = 50
	put(t, s, a2)
	if got, _ := s.GetBoard(ctx, a.ID); got != a2 {
		t.Fatalf("after update GetBoard = %+v, want %+v", got, a2)
	}
	wantTop(t, s, a.ID, ent(1, "m1", 5))

	if err := s.DeleteBoard(ctx, a.ID); err != nil {
		t.Fatalf("DeleteBoard: %v", err)
	}
	if _, err := s.GetBoard(ctx, a.ID); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("GetBoard after delete: %v, want ErrUnknownBoard", err)
	}
	if got := strings.Join(list(), ","); got != "rt-boards-b" {
		t.Fatalf("Boards after delete = %s", got)
	}
	if err := s.DeleteBoard(ctx, a.ID); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("second DeleteBoard: %v, want ErrUnknownBoard", err)
	}
}

func testBoardValidation(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	existing := put(t, s, rank.DefaultBoard("rt-valid-x"))
	var g ids
	apply(t, s, delta(existing.ID, g.next(), "m1", 3))
	before := snapshot(t, s, existing.ID)

	cases := []struct {
		name string
		mut  func(b *rank.Board)
		want error
	}{
		{"zero config", func(b *rank.Board) { *b = rank.Board{ID: b.ID} }, rank.ErrInvalidConfig},
		{"order", func(b *rank.Board) { b.Order = "up" }, rank.ErrInvalidConfig},
		{"mode", func(b *rank.Board) { b.Mode = "max" }, rank.ErrInvalidConfig},
		{"tiebreak", func(b *rank.Board) { b.Tiebreak = "random" }, rank.ErrInvalidConfig},
		{"reset", func(b *rank.Board) { b.Reset = "yearly" }, rank.ErrInvalidConfig},
		{"tz", func(b *rank.Board) { b.TZ = "Mars/Olympus_Mons" }, rank.ErrInvalidConfig},
		{"top 0", func(b *rank.Board) { b.Top = 0 }, rank.ErrInvalidConfig},
		{"top 101", func(b *rank.Board) { b.Top = 101 }, rank.ErrInvalidConfig},
		{"max_delta", func(b *rank.Board) { b.MaxDelta = -1 }, rank.ErrInvalidConfig},
		{"window 0", func(b *rank.Board) { b.IdempotencyWindow = 0 }, rank.ErrInvalidConfig},
		{"window 8d", func(b *rank.Board) { b.IdempotencyWindow = rank.Duration(8 * 24 * time.Hour) }, rank.ErrInvalidConfig},
		{"title", func(b *rank.Board) { b.Title = strings.Repeat("t", rank.MaxTitle+1) }, rank.ErrInvalidConfig},
	}
	for _, tc := range cases {
		for _, id := range []string{existing.ID, "rt-valid-new"} {
			b := board(id, tc.mut)
			if got, err := s.PutBoard(ctx, b); !errors.Is(err, tc.want) {
				t.Errorf("%s: PutBoard(%s) = %+v, %v; want %v", tc.name, id, got, err, tc.want)
			}
		}
		if got, err := s.GetBoard(ctx, existing.ID); err != nil || got != existing {
			t.Errorf("%s: existing board became %+v, %v", tc.name, got, err)
		}
		if _, err := s.GetBoard(ctx, "rt-valid-new"); !errors.Is(err, rank.ErrUnknownBoard) {
			t.Errorf("%s: a rejected new board exists (%v)", tc.name, err)
		}
	}
	for _, id := range []string{"", "has space", "semi;colon", "{tag}", strings.Repeat("b", 65), "ünï"} {
		if _, err := s.PutBoard(ctx, rank.DefaultBoard(id)); !errors.Is(err, rank.ErrInvalidBoard) {
			t.Errorf("PutBoard(%q): %v, want ErrInvalidBoard", id, err)
		}
	}
	if after := snapshot(t, s, existing.ID); after != before {
		t.Fatalf("rejected puts changed data:\n%s\nwant\n%s", after, before)
	}
	bs, err := s.Boards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if strings.HasPrefix(b.ID, "rt-valid-") && b.ID != existing.ID {
			t.Fatalf("rejected board %s is listed", b.ID)
		}
	}
}

func testUnknownBoard(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	put(t, s, rank.DefaultBoard("rt-unknown-exists"))
	cases := []struct {
		id   string
		want error
	}{
		{"rt-unknown-absent", rank.ErrUnknownBoard},
		{"bad board!", rank.ErrInvalidBoard},
		{"", rank.ErrInvalidBoard},
	}
	for _, tc := range cases {
		ops := map[string]func() error{
			"GetBoard":    func() error { _, err := s.GetBoard(ctx, tc.id); return err },
			"DeleteBoard": func() error { return s.DeleteBoard(ctx, tc.id) },
			"Count":       func() error { _, err := s.Count(ctx, tc.id); return err },
			"Apply":       func() error { _, err := rank.ApplyWait(ctx, s, delta(tc.id, "r1", "m1", 1)); return err },
			"Top":         func() error { _, err := s.Top(ctx, tc.id, "", 0, 10); return err },
			"Ranks":       func() error { _, err := s.Ranks(ctx, tc.id, "", []string{"m1"}, 1); return err },
		}
		for name, op := range ops {
			if err := op(); !errors.Is(err, tc.want) {
				t.Errorf("%s(%q) = %v, want %v", name, tc.id, err, tc.want)
			}
		}
	}
	// None of that created a board.
	if _, err := s.GetBoard(ctx, "rt-unknown-absent"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("board created by a failing op: %v", err)
	}
	if n, err := s.Count(ctx, "rt-unknown-exists"); err != nil || n != 0 {
		t.Fatalf("Count(existing) = %d, %v", n, err)
	}
}

func testCount(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, rank.DefaultBoard("rt-count"))
	count := func() int64 {
		t.Helper()
		n, err := s.Count(ctx, b.ID)
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("Count(empty) = %d", n)
	}
	var g ids
	for _, m := range []string{"a", "b", "c", "a", "b"} {
		apply(t, s, delta(b.ID, g.next(), m, 1))
	}
	if n := count(); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
	applyErr(t, s, delta(b.ID, g.next(), "bad member", 1), rank.ErrInvalidMember)
	if n := count(); n != 3 {
		t.Fatalf("Count after an error = %d, want 3", n)
	}
}

func testDeleteBoard(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	b := put(t, s, rank.DefaultBoard("rt-delete"))
	other := put(t, s, rank.DefaultBoard("rt-delete-other"))
	apply(t, s, named(delta(b.ID, "x", "a", 10), "Alice"))
	apply(t, s, delta(b.ID, "y", "b", 20))
	apply(t, s, delta(other.ID, "x", "a", 7))
	otherBefore := snapshot(t, s, other.ID)

	if err := s.DeleteBoard(ctx, b.ID); err != nil {
		t.Fatalf("DeleteBoard: %v", err)
	}
	if _, err := rank.ApplyWait(ctx, s, delta(b.ID, "z", "a", 1)); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("Apply after delete: %v", err)
	}
	put(t, s, b)
	if n, err := s.Count(ctx, b.ID); err != nil || n != 0 {
		t.Fatalf("Count of re-created board = %d, %v", n, err)
	}
	pg := top(t, s, b.ID, "", 0, 10)
	if len(pg.Entries) != 0 || pg.Total != 0 || pg.Seq != 0 {
		t.Fatalf("re-created board not empty: %+v", pg)
	}
	if m := one(t, s, b.ID, "a", 2); m.Found {
		t.Fatalf("member survived delete: %+v", m)
	}
	// The idempotency record, the seq and the names went with the board.
	r := apply(t, s, delta(b.ID, "x", "a", 3))
	if r.Duplicate || r.Score != 3 || r.Seq != 1 || r.PrevRank != 0 {
		t.Fatalf("first event after re-creation = %+v, want fresh score 3 at seq 1", r)
	}
	wantTop(t, s, b.ID, ent(1, "a", 3))
	if after := snapshot(t, s, other.ID); after != otherBefore {
		t.Fatalf("deleting a board changed another:\n%s\nwant\n%s", after, otherBefore)
	}
}

func testPingClose(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := t.Context()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	b := put(t, s, rank.DefaultBoard("rt-close"))
	apply(t, s, delta(b.ID, "r1", "a", 1))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := rank.ApplyWait(ctx, s, delta(b.ID, "r2", "a", 1)); err == nil {
		t.Fatal("Apply after Close succeeded")
	}
	if _, err := s.Top(ctx, b.ID, "", 0, 10); err == nil {
		t.Fatal("Top after Close succeeded")
	}
	if _, err := s.GetBoard(ctx, b.ID); err == nil {
		t.Fatal("GetBoard after Close succeeded")
	}
	_ = s.Close() // a second Close must not panic; its error is the engine's choice
}
