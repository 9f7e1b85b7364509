package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/rank"
)

// cacheStore is a store with a board cache: cached boards are answered by
// CachedBoard, the others by Board, which records the bound it was given.
type cacheStore struct {
	rank.Store // nil: only the board methods are called
	cached     map[string]*rank.Board
	stored     map[string]rank.Board

	boardCalls int
	deadline   time.Time // of Board's last context
}

func (s *cacheStore) CachedBoard(id string) (*rank.Board, bool) {
	b, ok := s.cached[id]
	return b, ok
}

func (s *cacheStore) Board(ctx context.Context, id string) (rank.Board, error) {
	s.boardCalls++
	s.deadline, _ = ctx.Deadline()
	if b, ok := s.stored[id]; ok {
		return b, nil
	}
	return rank.Board{}, rank.ErrUnknownBoard
}

type nopVerifier struct{}

func (nopVerifier) Verify(context.Context, string) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthorized
}

// A board the store's cache holds is read there, without a Board call (nor
// a context for it); any other goes to Board, bounded by StoreTimeout.
func TestBoardCacheFirst(t *testing.T) {
	t.Parallel()
	st := &cacheStore{
		cached: map[string]*rank.Board{"hot": {ID: "hot", Public: true, ClientWrites: true, Top: 7}},
		stored: map[string]rank.Board{"cold": {ID: "cold", Public: false, ClientWrites: true, Top: 3}},
	}
	h, err := New(Deps{Store: st, Verifier: nopVerifier{}, Live: new(live.Engine)}, Config{StoreTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.board(t.Context(), "hot")
	if err != nil || b != (boardConf{public: true, clientWrites: true, top: 7}) || st.boardCalls != 0 {
		t.Fatalf("hot: %+v, %v, %d Board calls; want the cached config and none", b, err, st.boardCalls)
	}
	before := time.Now()
	b, err = h.board(t.Context(), "cold")
	if err != nil || b != (boardConf{clientWrites: true, top: 3}) || st.boardCalls != 1 {
		t.Fatalf("cold: %+v, %v, %d Board calls; want the stored config from one", b, err, st.boardCalls)
	}
	if st.deadline.Before(before.Add(time.Minute)) || st.deadline.After(time.Now().Add(time.Minute)) {
		t.Fatalf("Board's deadline %v is not StoreTimeout after the call", st.deadline)
	}
	if _, err := h.board(t.Context(), "ghost"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("ghost: %v, want ErrUnknownBoard", err)
	}
}
