package rank

import (
	"context"
	"testing"
)

// cacheOnly is an engine whose Board cache holds one board, and that knows
// no other.
type cacheOnly struct {
	Store // nil: only the board methods are called
	b     Board
}

func (s cacheOnly) CachedBoard(id string) (*Board, bool) {
	if id == s.b.ID {
		return &s.b, true
	}
	return nil, false
}

func (s cacheOnly) Board(_ context.Context, id string) (Board, error) {
	if id == s.b.ID {
		return s.b, nil
	}
	return Board{}, ErrUnknownBoard
}

// AutoCreate forwards the engine's board cache: a cached board is answered
// as Board answers it, anything else is left to Board (which answers a
// missing board as it would be created).
func TestAutoCreateBoardCache(t *testing.T) {
	t.Parallel()
	b := DefaultBoard("known")
	b.Title = "stored"
	a := AutoCreate(cacheOnly{b: b}, 0)
	if got, ok := a.CachedBoard("known"); !ok || got.Title != "stored" {
		t.Fatalf("CachedBoard(known) = %v, %v", got, ok)
	}
	if _, ok := a.CachedBoard("new"); ok {
		t.Fatal("CachedBoard(new) answered: only Board knows it would be created")
	}
	if got, err := a.Board(t.Context(), "new"); err != nil || got.ID != "new" {
		t.Fatalf("Board(new) = %v, %v; want the default board", got.ID, err)
	}
}

// streamOnly is an engine that knows one board's stream.
type streamOnly struct {
	Store
	id string
}

func (s streamOnly) MarkStream(_ context.Context, id string) (Stream, error) {
	if id == s.id {
		return Stream{Epoch: "e1", Seq: 3}, nil
	}
	return Stream{}, ErrUnknownBoard
}

func (s streamOnly) RenewEpoch(_ context.Context, id, _ string) (string, error) {
	if id == s.id {
		return "e2", nil
	}
	return "", ErrUnknownBoard
}

// A board AutoCreate shows before it exists has the unborn epoch, which no
// made board has; a made board's stream passes through; an invalid id is
// still an error.
func TestAutoCreateStreams(t *testing.T) {
	t.Parallel()
	a := AutoCreate(streamOnly{id: "known"}, 0)
	ctx := t.Context()
	if st, err := a.MarkStream(ctx, "new"); err != nil || st.Epoch != UnbornEpoch || st.Seq != 0 {
		t.Fatalf("MarkStream(new) = %+v, %v; want the unborn epoch", st, err)
	}
	if e, err := a.RenewEpoch(ctx, "new", "x"); err != nil || e != UnbornEpoch {
		t.Fatalf("RenewEpoch(new) = %q, %v", e, err)
	}
	if st, err := a.MarkStream(ctx, "known"); err != nil || st.Epoch != "e1" {
		t.Fatalf("MarkStream(known) = %+v, %v", st, err)
	}
	if e, err := a.RenewEpoch(ctx, "known", "e1"); err != nil || e != "e2" {
		t.Fatalf("RenewEpoch(known) = %q, %v", e, err)
	}
	if _, err := a.MarkStream(ctx, "bad id"); err == nil {
		t.Fatal("MarkStream of an invalid id answered")
	}
}
