package hub

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/rank"
)

// lazyTimeout behaves as context.WithTimeout, timer or not: its deadline,
// its end at the deadline, with its parent, and at release.
func TestLazyTimeout(t *testing.T) {
	t.Parallel()
	type key struct{}
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
		defer cancelParent()

		l := newLazyTimeout(parent, 2*time.Second)
		if dl, ok := l.Deadline(); !ok || !dl.Equal(time.Now().Add(2*time.Second)) {
			t.Fatalf("Deadline = %v, %v", dl, ok)
		}
		if l.Value(key{}) != "v" || l.Err() != nil {
			t.Fatalf("Value %v, Err %v", l.Value(key{}), l.Err())
		}
		if l.ctx != nil {
			t.Fatal("armed without anyone asking for Done")
		}
		time.Sleep(2 * time.Second)
		if !errors.Is(l.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err at the deadline, unarmed = %v", l.Err())
		}
		l.release()

		l = newLazyTimeout(parent, 2*time.Second)
		done := l.Done()
		time.Sleep(time.Second)
		select {
		case <-done:
			t.Fatal("done before the deadline")
		default:
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("not done at the deadline")
		}
		if !errors.Is(l.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", l.Err())
		}
		l.release()

		// A nearer parent deadline wins.
		near, cancelNear := context.WithTimeout(parent, time.Second)
		l = newLazyTimeout(near, time.Hour)
		if dl, _ := l.Deadline(); !dl.Equal(time.Now().Add(time.Second)) {
			t.Fatalf("Deadline %v, want the parent's", dl)
		}
		l.release()
		cancelNear()

		// Released: ended, whether armed before or after.
		l = newLazyTimeout(parent, time.Hour)
		l.release()
		if !errors.Is(l.Err(), context.Canceled) {
			t.Fatalf("Err after release, unarmed = %v", l.Err())
		}
		<-l.Done()
		l = newLazyTimeout(parent, time.Hour)
		done = l.Done()
		l.release()
		<-done

		// The parent ending ends it.
		l = newLazyTimeout(parent, time.Hour)
		cancelParent()
		if !errors.Is(l.Err(), context.Canceled) {
			t.Fatalf("Err with the parent cancelled, unarmed = %v", l.Err())
		}
		<-l.Done()
		l.release()
	})
}

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
