package integrity_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/integrity"
	"github.com/wsgateway/wsgateway/internal/hooktest"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

const secret = "integrity-test-secret"

// env is a memory engine under the integrity wrapper, its sink feeding the
// wrapper's member.held queue.
type env struct {
	s     *integrity.Store
	store *memstore.Store
}

func newEnv(t *testing.T, cfg integrity.Config) *env {
	t.Helper()
	e := &env{}
	ms, err := memstore.New(rank.Hooks{Sink: func(b []rank.Change) { e.s.Changed(b) }}, memstore.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	cfg.AllowPrivate = true // the hook listens on loopback
	e.store = ms
	if e.s, err = integrity.Wrap(ms, cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) board(t *testing.T, id string, h *hooktest.Hook, mut func(*rank.Board)) rank.Board {
	t.Helper()
	b := rank.DefaultBoard(id)
	b.Hook = rank.Hook{URL: h.URL, Secret: h.Secret, Timeout: rank.Duration(time.Second), OnError: rank.OnErrorReject}
	if mut != nil {
		mut(&b)
	}
	b, err := e.s.PutBoard(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) apply(t *testing.T, ev rank.Event) (rank.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return rank.ApplyWait(ctx, e.s, ev)
}

func delta(board, id, member string, d int64) rank.Event {
	return rank.Event{Board: board, ID: id, Member: member, Op: rank.OpDelta, Amount: d}
}

// TestVerdicts: accept applies, reject answers rejected with the hook's
// reason and applies nothing, flag applies and holds; every call carries
// the event and the member's entry as it is, signed (hooktest checks the
// signature and headers of every call).
func TestVerdicts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, integrity.Config{})
	h := hooktest.New(t, secret, func(c hooktest.Call) hooktest.Answer {
		switch c.Body["id"] {
		case "r1":
			return hooktest.Reject("impossible time")
		case "f1":
			return hooktest.Flag("suspicious")
		}
		return hooktest.Accept()
	})
	b := e.board(t, "v", h, nil)
	r, err := e.apply(t, rank.Event{Board: b.ID, ID: "a1", Member: "ann", Op: rank.OpDelta, Amount: 10, Meta: `{"level":3}`})
	if err != nil || r.Score != 10 || r.Rank != 1 || r.Held {
		t.Fatalf("accepted: %+v, %v", r, err)
	}
	_, err = e.apply(t, delta(b.ID, "r1", "ann", 500))
	var re *rank.RejectedError
	if !errors.As(err, &re) || re.Reason != "impossible time" {
		t.Fatalf("rejected: %v", err)
	}
	r, err = e.apply(t, delta(b.ID, "f1", "ann", 5))
	if err != nil || !r.Held || r.Hold != "suspicious" || r.Score != 15 {
		t.Fatalf("flagged: %+v, %v", r, err)
	}
	calls := h.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	first := calls[0].Body
	if first["board"] != "v" || first["member"] != "ann" || first["id"] != "a1" || first["delta"] != 10.0 ||
		first["period"] != 0.0 || first["score"] != nil || first["rank"] != nil || first["value"] != nil {
		t.Fatalf("first call: %s", calls[0].Raw)
	}
	if m, ok := first["meta"].(map[string]any); !ok || m["level"] != 3.0 {
		t.Fatalf("first call's meta: %s", calls[0].Raw)
	}
	if third := calls[2].Body; third["score"] != 10.0 || third["rank"] != 1.0 || third["meta"] != nil {
		t.Fatalf("third call (ann at 10, first): %s", calls[2].Raw)
	}
	if calls[0].Delivery != integrity.DeliveryID("v", "ann", "a1") {
		t.Fatalf("delivery id %q", calls[0].Delivery)
	}
}

// TestOneCallPerID: re-sends after the verdict (each kind) are answered
// from the record; the same id sent many times at once is called once,
// the others answered unavailable (pending) meanwhile.
func TestOneCallPerID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, integrity.Config{})
	release := make(chan struct{})
	h := hooktest.New(t, secret, func(c hooktest.Call) hooktest.Answer {
		switch c.Body["id"] {
		case "r":
			return hooktest.Reject("no")
		case "slow":
			return hooktest.Answer{Until: release}
		}
		return hooktest.Accept()
	})
	b := e.board(t, "once", h, nil)
	for _, id := range []string{"a", "r"} {
		first, err1 := e.apply(t, delta(b.ID, id, "ann", 1))
		for range 3 {
			again, err := e.apply(t, delta(b.ID, id, "ann", 1))
			if (err == nil) != (err1 == nil) || (err == nil && (!again.Duplicate || again.Seq != first.Seq)) {
				t.Fatalf("re-send of %s: %+v, %v; first %+v, %v", id, again, err, first, err1)
			}
		}
		if n := h.CallsOf(id); n != 1 {
			t.Fatalf("%d calls for %s, want 1", n, id)
		}
	}

	results := make(chan error, 8)
	for range 8 {
		go func() { _, err := e.apply(t, delta(b.ID, "slow", "bob", 1)); results <- err }()
	}
	// Seven are answered while the one call waits on the hook.
	pending := 0
	for range 7 {
		select {
		case err := <-results:
			var pe *rank.PendingError
			if !errors.As(err, &pe) {
				t.Fatalf("a send while the call is under way: %v", err)
			}
			pending++
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 7 sends answered while the call is under way", pending)
		}
	}
	close(release)
	if err := <-results; err != nil {
		t.Fatalf("the claimer's send: %v", err)
	}
	if n := h.CallsOf("slow"); n != 1 {
		t.Fatalf("%d calls for the id sent 8 times at once, want 1", n)
	}
}

// TestOnError: no answer within the timeout, an error status, or an answer
// that is no verdict: on_error reject answers unavailable with the claim's
// retry (and the event may pass later, calling again); accept applies.
func TestOnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, integrity.Config{})
	var mu sync.Mutex
	answer := hooktest.Answer{Delay: time.Second}
	h := hooktest.New(t, secret, func(hooktest.Call) hooktest.Answer {
		mu.Lock()
		defer mu.Unlock()
		return answer
	})
	set := func(a hooktest.Answer) { mu.Lock(); answer = a; mu.Unlock() }
	rej := e.board(t, "oe-reject", h, func(b *rank.Board) { b.Hook.Timeout = rank.Duration(50 * time.Millisecond) })
	acc := e.board(t, "oe-accept", h, func(b *rank.Board) {
		b.Hook.Timeout = rank.Duration(50 * time.Millisecond)
		b.Hook.OnError = rank.OnErrorAccept
	})
	for i, a := range []hooktest.Answer{
		{Delay: time.Second},
		{Status: http.StatusInternalServerError, Body: `{"verdict":"accept"}`},
		{Body: `{"verdict":"maybe"}`},
		{Body: `not json`},
	} {
		set(a)
		id := string(rune('a' + i))
		_, err := e.apply(t, delta(rej.ID, id, "ann", 1))
		var pe *rank.PendingError
		if !errors.As(err, &pe) || pe.RetryAfter() <= 0 || pe.RetryAfter() > rej.ClaimFor() {
			t.Fatalf("answer %d, on_error reject: %v", i, err)
		}
		r, err := e.apply(t, delta(acc.ID, id, "ann", 1))
		if err != nil || r.Score != int64(i+1) {
			t.Fatalf("answer %d, on_error accept: %+v, %v", i, r, err)
		}
	}
	// The rejected-by-error event passes once the hook answers and its
	// claim has lapsed.
	set(hooktest.Accept())
	testenv.Eventually(t, 5*time.Second, "a re-send passes after the claim lapses", func() error {
		_, err := e.apply(t, delta(rej.ID, "a", "ann", 1))
		return err
	})
	if n := h.CallsOf("a"); n != 3 {
		t.Fatalf("calls for a: %d, want 3 (reject board twice, accept board once)", n)
	}
}

// TestBusy: past a board's bound of calls in flight, an event is answered
// unavailable at once; another board's calls go on.
func TestBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, integrity.Config{MaxBoardCalls: 1})
	release := make(chan struct{})
	h := hooktest.New(t, secret, func(c hooktest.Call) hooktest.Answer {
		if c.Body["board"] == "busy" {
			return hooktest.Answer{Until: release}
		}
		return hooktest.Accept()
	})
	busy := e.board(t, "busy", h, nil)
	other := e.board(t, "other", h, nil)
	done := make(chan error, 1)
	go func() { _, err := e.apply(t, delta(busy.ID, "1", "ann", 1)); done <- err }()
	testenv.Until(t, 5*time.Second, "the first call arrives", func() bool { return len(h.Calls()) == 1 })
	_, err := e.apply(t, delta(busy.ID, "2", "bob", 1))
	var pe *rank.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("past the board's bound: %v", err)
	}
	if r, err := e.apply(t, delta(other.ID, "1", "cy", 1)); err != nil || r.Score != 1 {
		t.Fatalf("another board while one is busy: %+v, %v", r, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first call: %v", err)
	}
}

// TestOtherBoardsNotDelayed (R36): while a board's hook hangs, events of
// other boards, and events of its board that the hook need not see, apply
// and answer at once.
func TestOtherBoardsNotDelayed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, integrity.Config{})
	h := hooktest.New(t, secret, func(hooktest.Call) hooktest.Answer { return hooktest.Answer{Until: make(chan struct{})} })
	slow := e.board(t, "slow", h, func(b *rank.Board) { b.Hook.Timeout = rank.Duration(5 * time.Second); b.Hook.Top = 1 })
	plain, err := e.s.PutBoard(t.Context(), rank.DefaultBoard("plain"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutBoard(t.Context(), slow); err != nil {
		t.Fatal(err)
	}
	// Seed the slow board's top 1 without the hook (the engine itself).
	seed := delta(slow.ID, "seed", "top", 1000)
	ve := &rank.ValidateError{}
	if _, err := rank.ApplyWait(t.Context(), e.store, seed); !errors.As(err, &ve) {
		t.Fatalf("seed: %v", err)
	}
	seed.Verdict, seed.Claim = rank.VerdictAccept, ve.Token
	if _, err := rank.ApplyWait(t.Context(), e.store, seed); err != nil {
		t.Fatal(err)
	}
	// Apply returns before the hook answers: the call runs on a goroutine
	// of its own, not the caller's (on Redis, the lane's completer).
	hung := make(chan struct{})
	e.s.Apply(t.Context(), delta(slow.ID, "c", "cheat", 5000), func(rank.Result, error) { close(hung) })
	testenv.Until(t, 5*time.Second, "the hung call arrives", func() bool { return len(h.Calls()) == 1 })
	for i := range 100 {
		if _, err := e.apply(t, delta(plain.ID, "p"+string(rune('0'+i%10))+string(rune('a'+i/10)), "ann", 1)); err != nil {
			t.Fatalf("another board: %v", err)
		}
		if r, err := e.apply(t, delta(slow.ID, "n"+string(rune('0'+i%10))+string(rune('a'+i/10)), "low", 1)); err != nil || r.Held {
			t.Fatalf("a non-contender of the hung board: %+v, %v", r, err)
		}
	}
	select {
	case <-hung:
		t.Fatal("the hung call answered before its hook")
	default:
	}
}

// TestHeldWebhook: a member held by an event applied here is told to the
// webhooks that want member.held, once.
func TestHeldWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t, integrity.Config{})
	h := hooktest.New(t, secret, func(hooktest.Call) hooktest.Answer { return hooktest.Flag("odd") })
	b := e.board(t, "hw", h, nil)
	if _, err := e.s.PutWebhook(t.Context(), rank.Webhook{ID: "w", URL: "https://example.com/hook", Secret: secret, Events: []string{rank.EventMemberHeld}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go e.s.Run(ctx)
	if r, err := e.apply(t, delta(b.ID, "x", "cheat", 1)); err != nil || !r.Held {
		t.Fatalf("flagged: %+v, %v", r, err)
	}
	testenv.Eventually(t, 5*time.Second, "member.held appended", func() error {
		ds, err := e.s.Deliveries(t.Context(), "w")
		if err != nil {
			return err
		}
		if len(ds) != 1 || ds[0].Event != rank.EventMemberHeld || ds[0].Board != "hw" ||
			string(ds[0].Data) != `{"member":"cheat","reason":"odd","period":0}` {
			return errors.New("deliveries: " + func() string {
				out := ""
				for _, d := range ds {
					out += d.Event + " " + string(d.Data) + "; "
				}
				return out
			}())
		}
		return nil
	})
}
