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
