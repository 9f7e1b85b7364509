package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// countingStore counts the reads the outbox watcher makes of its store.
type countingStore struct {
	rank.Store
	webhooks, now, boards, configs, getBoard atomic.Int64
}

func (s *countingStore) Webhooks(ctx context.Context) ([]rank.Webhook, error) {
	s.webhooks.Add(1)
	return s.Store.Webhooks(ctx)
}

func (s *countingStore) Now(ctx context.Context) (time.Time, error) {
	s.now.Add(1)
	return s.Store.Now(ctx)
}

func (s *countingStore) Boards(ctx context.Context) ([]rank.Board, error) {
	s.boards.Add(1)
	bs, err := s.Store.Boards(ctx)
	s.configs.Add(int64(len(bs)))
	return bs, err
}

func (s *countingStore) GetBoard(ctx context.Context, id string) (rank.Board, error) {
	s.getBoard.Add(1)
	s.configs.Add(1)
	return s.Store.GetBoard(ctx, id)
}

func (s *countingStore) String() string {
	return fmt.Sprintf("Webhooks %d, Now %d, Boards %d, GetBoard %d, board configs %d",
		s.webhooks.Load(), s.now.Load(), s.boards.Load(), s.getBoard.Load(), s.configs.Load())
}

// newMemStore is a memory engine on the clock of the synctest bubble it
// is made in.
func newMemStore(t *testing.T) rank.Store {
	t.Helper()
	ms, err := memstore.New(rank.Hooks{}, memstore.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	return ms
}

// runWatcher runs a watcher on store (through a counting wrapper) with
// the given Every until the test ends.
func runWatcher(t *testing.T, store rank.Store, every time.Duration) (*Watcher, *countingStore) {
	t.Helper()
	cs := &countingStore{Store: store}
	w := NewWatcher(cs, WatchConfig{Every: every})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w, cs
}

func putBoard(t *testing.T, s rank.Store, b rank.Board) {
	t.Helper()
	if _, err := s.PutBoard(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func putHook(t *testing.T, s rank.Store, events ...string) {
	t.Helper()
	if _, err := s.PutWebhook(context.Background(), rank.Webhook{ID: "w", URL: "https://example.com/h",
		Secret: "0123456789abcdef", Events: events}); err != nil {
		t.Fatal(err)
	}
}

// appended lists the outbox's events for webhook w, oldest first, as
// "event board" (with the state of a board.state).
func appended(t *testing.T, s rank.Store) []string {
	t.Helper()
	ds, err := s.Deliveries(context.Background(), "w")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range slices.Backward(ds) {
		e := d.Event + " " + d.Board
		if d.Event == rank.EventBoardState {
			e += " " + strings.Trim(strings.TrimPrefix(string(d.Data), `{"state":`), `"}`)
		}
		out = append(out, e)
	}
	return out
}

// TestWatchSleepsUntilDue: a board that ends in ten minutes is told when
// the store clock gets there, and the watcher reads nothing of the store
// in between (Every is longer): no per-second reads of the webhooks, the
// clock or the boards.
func TestWatchSleepsUntilDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t)
		cup := rank.DefaultBoard("cup")
		cup.EndsAt = rank.At(time.Now().Add(10 * time.Minute))
		putBoard(t, s, cup)
		putBoard(t, s, rank.DefaultBoard("plain"))
		putHook(t, s, rank.EventBoardFinal)
		_, cs := runWatcher(t, s, time.Hour)
		synctest.Wait()
		first := cs.String()
		if first != "Webhooks 1, Now 1, Boards 1, GetBoard 0, board configs 2" {
			t.Fatalf("first look: %s", first)
		}
		time.Sleep(10*time.Minute - time.Millisecond)
		synctest.Wait()
		if got := appended(t, s); len(got) != 0 {
			t.Fatalf("before the end: %v", got)
		}
		if cs.String() != first {
			t.Fatalf("reads while nothing was due: %s, want still %s", cs, first)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := appended(t, s); !slices.Equal(got, []string{"board.final cup"}) {
			t.Fatalf("at the end: %v", got)
		}
		if cs.boards.Load() != 1 {
			t.Fatalf("the end re-listed the boards: %s", cs)
		}
	})
}

// TestWatchHearsBoardChanges: while the watcher sleeps, a board created,
// one whose end is moved earlier and one deleted (what BoardChanged and
// another node's board event tell it) are each read once and acted on at
// their new times, with no list of every board; a name that is no board
// is read once and dropped, not retried.
func TestWatchHearsBoardChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t)
		t0 := time.Now()
		ending := func(id string, in time.Duration) rank.Board {
			b := rank.DefaultBoard(id)
			b.EndsAt = rank.At(t0.Add(in))
			return b
		}
		putBoard(t, s, ending("cup", 50*time.Minute))
		putBoard(t, s, ending("gone", 4*time.Minute))
		putHook(t, s, rank.EventBoardFinal)
		w, cs := runWatcher(t, s, time.Hour)
		synctest.Wait()
		time.Sleep(time.Minute)
		putBoard(t, s, ending("late", 6*time.Minute))
		w.BoardChanged("late")
		putBoard(t, s, ending("cup", 3*time.Minute))
		w.BoardChanged("cup")
		if err := s.DeleteBoard(context.Background(), "gone"); err != nil {
			t.Fatal(err)
		}
		w.BoardChanged("gone")
		w.BoardChanged("no/such board") // never a board: read once, dropped
		time.Sleep(2*time.Minute - time.Millisecond)
		synctest.Wait()
		if got := appended(t, s); len(got) != 0 {
			t.Fatalf("before the first end: %v", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := appended(t, s); !slices.Equal(got, []string{"board.final cup"}) {
			t.Fatalf("at cup's new end: %v", got)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if got := appended(t, s); !slices.Equal(got, []string{"board.final cup", "board.final late"}) {
			t.Fatalf("at late's end, past gone's: %v", got)
		}
		if cs.boards.Load() != 1 || cs.getBoard.Load() != 4 {
			t.Fatalf("reads: %s; want one list and one read of each changed board", cs)
		}
	})
}

// TestWatchOnceOverWatchers: two nodes' watchers on one store tell each
// state change and the board's end once, a node started after a fact
// became true (while no node ran) still tells it, and a webhook created
// while a fact is news hears of it.
func TestWatchOnceOverWatchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t)
		t0 := time.Now()
		cup := rank.DefaultBoard("cup")
		cup.StartsAt, cup.EndsAt, cup.Grace = rank.At(t0.Add(time.Minute)), rank.At(t0.Add(3*time.Minute)), rank.Duration(time.Minute)
		putBoard(t, s, cup)
		time.Sleep(90 * time.Second) // open, before any node runs
		putHook(t, s, rank.EventBoardFinal)
		_, a := runWatcher(t, s, time.Minute)
		_, b := runWatcher(t, s, time.Minute)
		synctest.Wait()
		if got := appended(t, s); len(got) != 0 {
			t.Fatalf("nothing final yet: %v", got)
		}
		// The webhook now wants the state changes too: the open one, still
		// news, is told at the watchers' next look (Every).
		putHook(t, s, rank.EventBoardFinal, rank.EventBoardState)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		want := []string{"board.state cup open", "board.state cup closing", "board.state cup final", "board.final cup"}
		if got := appended(t, s); !slices.Equal(got, want) {
			t.Fatalf("appended %v, want %v", got, want)
		}
		for _, cs := range []*countingStore{a, b} {
			if cs.boards.Load() > 11 {
				t.Fatalf("in 10 minutes of Every 1m: %s", cs)
			}
		}
	})
}

// TestWatchReads counts the watcher's store reads over ten minutes of the
// store clock, a thousand boards (half with daily periods, half ending,
// ten of those within the ten minutes) and one webhook, on
// the default Every: the numbers docs/webhooks.md quotes. Before the
// watcher slept until a fact was due it read the webhooks, the clock and
// every board each second (601 lists, 601,000 configs here).
func TestWatchReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t)
		t0 := time.Now()
		for i := range 1000 {
			b := rank.DefaultBoard(fmt.Sprintf("b%04d", i))
			switch {
			case i%2 == 0:
				b.Reset = rank.Daily
			case i/2 < 10:
				b.EndsAt = rank.At(t0.Add(time.Duration(i/2)*time.Minute + 30*time.Second))
			default:
				b.EndsAt = rank.At(t0.Add(time.Duration(i/2) * time.Hour))
			}
			putBoard(t, s, b)
		}
		putHook(t, s, rank.EventBoardFinal)
		_, cs := runWatcher(t, s, 0)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		t.Logf("10 minutes, 1000 boards, 10 of them ending: %s", cs)
		if got := len(appended(t, s)); got != 10 {
			t.Fatalf("%d board.final appended, want 10", got)
		}
		if cs.boards.Load() != 11 || cs.webhooks.Load() != 11+10 {
			t.Fatalf("reads: %s; want a list a minute and a look per end", cs)
		}
	})
}

// TestWatchHearsNewWebhook: a webhook put through this node (the API's
// store) wakes the sleeping watcher, which tells it at once of a fact
// still news that no webhook wanted before.
func TestWatchHearsNewWebhook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore(t)
		cup := rank.DefaultBoard("cup")
		cup.EndsAt = rank.At(time.Now().Add(time.Minute))
		putBoard(t, s, cup)
		putHook(t, s, rank.EventBoardState)
		w, _ := runWatcher(t, s, time.Hour)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if got := appended(t, s); !slices.Equal(got, []string{"board.state cup final"}) {
			t.Fatalf("before the new webhook: %v", got)
		}
		if _, err := s.PutWebhook(context.Background(), rank.Webhook{ID: "w", URL: "https://example.com/h",
			Secret: "0123456789abcdef", Events: []string{rank.EventBoardState, rank.EventBoardFinal}}); err != nil {
			t.Fatal(err)
		}
		w.WebhookChanged() // as the API tells it
		synctest.Wait()
		if got := appended(t, s); !slices.Equal(got, []string{"board.state cup final", "board.final cup"}) {
			t.Fatalf("after the new webhook: %v", got)
		}
	})
}
