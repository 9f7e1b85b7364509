package ranktest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Webhooks and their outbox (rank.Outbox, §13, R28), on the injected
// store clock.

func hook(id string, events []string, boards []string) rank.Webhook {
	return rank.Webhook{ID: id, URL: "https://hooks.example/" + id, Secret: "0123456789abcdef", Events: events, Boards: boards}
}

func testWebhookCRUD(t *testing.T, f Factory) {
	s := f(t, nil)
	ctx := context.Background()
	if _, err := s.GetWebhook(ctx, "rt-wh"); !errors.Is(err, rank.ErrNoWebhook) {
		t.Fatalf("get of none: %v, want ErrNoWebhook", err)
	}
	if err := s.DeleteWebhook(ctx, "rt-wh"); !errors.Is(err, rank.ErrNoWebhook) {
		t.Fatalf("delete of none: %v, want ErrNoWebhook", err)
	}
	bad := hook("rt-wh", []string{rank.EventBoardFinal}, nil)
	bad.Secret = "short"
	if _, err := s.PutWebhook(ctx, bad); !errors.Is(err, rank.ErrInvalidWebhook) {
		t.Fatalf("short secret: %v, want ErrInvalidWebhook", err)
	}
	if ws, _ := s.Webhooks(ctx); len(ws) != 0 {
		t.Fatalf("a refused put stored %v", ws)
	}
	b := hook("rt-whb", []string{rank.EventBoardFinal}, []string{"rt-x"})
	a := hook("rt-wha", []string{rank.EventPeriodFinal, rank.EventBoardState}, nil)
	for _, w := range []rank.Webhook{b, a} {
		if got, err := s.PutWebhook(ctx, w); err != nil || !webhookEqual(got, w) {
			t.Fatalf("put %s: %+v, %v", w.ID, got, err)
		}
	}
	got, err := s.GetWebhook(ctx, "rt-wha")
	if err != nil || !webhookEqual(got, a) || got.Secret != a.Secret {
		t.Fatalf("get: %+v, %v; want %+v with its secret (the API hides it, not the store)", got, err, a)
	}
	ws, err := s.Webhooks(ctx)
	if err != nil || len(ws) != 2 || ws[0].ID != "rt-wha" || ws[1].ID != "rt-whb" {
		t.Fatalf("list: %+v, %v; want rt-wha, rt-whb", ws, err)
	}
	a.URL = "https://hooks.example/moved"
	if _, err := s.PutWebhook(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetWebhook(ctx, "rt-wha"); got.URL != a.URL {
		t.Fatalf("replace: url %q", got.URL)
	}
	if err := s.DeleteWebhook(ctx, "rt-wha"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetWebhook(ctx, "rt-wha"); !errors.Is(err, rank.ErrNoWebhook) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := s.Deliveries(ctx, "rt-wha"); !errors.Is(err, rank.ErrNoWebhook) {
		t.Fatalf("deliveries of a deleted webhook: %v", err)
	}
}

func webhookEqual(a, b rank.Webhook) bool {
	return a.ID == b.ID && a.URL == b.URL && a.Secret == b.Secret && slices.Equal(a.Events, b.Events) &&
		slices.Equal(a.Boards, b.Boards) && (a.Boards == nil) == (b.Boards == nil)
}

// testOutboxOnce: a marker lets one append through, whoever calls; each
// webhook that wants the event gets one delivery, the others none.
func testOutboxOnce(t *testing.T, f Factory) {
	clk := NewClock(time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC))
	s := f(t, clk.Now)
	ctx := context.Background()
	all := hook("rt-all", []string{rank.EventPeriodFinal}, nil)
	only := hook("rt-only", []string{rank.EventPeriodFinal}, []string{"rt-other"})
	state := hook("rt-state", []string{rank.EventBoardState}, nil)
	for _, w := range []rank.Webhook{all, only, state} {
		if _, err := s.PutWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	ev := rank.OutboxEvent{Event: rank.EventPeriodFinal, Board: "rt-b", TS: clk.Now(), Data: json.RawMessage(`{"period":7}`)}
	results := make(chan bool, 8)
	for range 8 {
		go func() {
			ok, err := s.AppendOutbox(ctx, "rt-b|7", time.Hour, ev)
			if err != nil {
				t.Error(err)
			}
			results <- ok
		}()
	}
	appended := 0
	for range 8 {
		if <-results {
			appended++
		}
	}
	if appended != 1 {
		t.Fatalf("%d of 8 appends with one marker went through, want 1", appended)
	}
	ds, err := s.Deliveries(ctx, "rt-all")
	if err != nil || len(ds) != 1 {
		t.Fatalf("rt-all deliveries %+v, %v; want 1", ds, err)
	}
	d := ds[0]
	if d.Event != rank.EventPeriodFinal || d.Board != "rt-b" || d.Status != rank.DeliveryPending || d.Attempts != 0 ||
		string(d.Data) != `{"period":7}` || !d.TS.Equal(clk.Now()) || !d.NextAttemptAt.Equal(clk.Now()) || d.ID == "" {
		t.Fatalf("delivery %+v", d)
	}
	for _, id := range []string{"rt-only", "rt-state"} {
		if ds, _ := s.Deliveries(ctx, id); len(ds) != 0 {
			t.Fatalf("%s got %+v of an event it does not want", id, ds)
		}
	}
	// The marker lapses after keep: a new fact with it is appended.
	clk.Advance(time.Hour + time.Second)
	if ok, err := s.AppendOutbox(ctx, "rt-b|7", 0, ev); !ok || err != nil {
		t.Fatalf("append after the marker lapsed: %v, %v", ok, err)
	}
	if ok, _ := s.AppendOutbox(ctx, "rt-b|7", 0, ev); ok {
		t.Fatal("a marker kept for good let a second append through")
	}
	if ds, _ := s.Deliveries(ctx, "rt-all"); len(ds) != 2 || ds[0].ID == ds[1].ID || ds[1].ID != d.ID {
		t.Fatalf("deliveries %+v: want 2, newest first", ds)
	}
}

// testOutboxLease: one holder at a time; a lease that ends without an
// outcome makes the delivery due again; a stale holder records nothing.
func testOutboxLease(t *testing.T, f Factory) {
	clk := NewClock(time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC))
	s := f(t, clk.Now)
	ctx := context.Background()
	if _, err := s.PutWebhook(ctx, hook("rt-l", []string{rank.EventBoardFinal}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.LeaseDelivery(ctx, "n1", time.Minute); ok || err != nil {
		t.Fatalf("lease of an empty outbox: %v, %v", ok, err)
	}
	ev := rank.OutboxEvent{Event: rank.EventBoardFinal, Board: "rt-b", TS: clk.Now(), Data: json.RawMessage(`{}`)}
	if _, err := s.AppendOutbox(ctx, "rt-final", 0, ev); err != nil {
		t.Fatal(err)
	}
	d, w, ok, err := s.LeaseDelivery(ctx, "n1", time.Minute)
	if !ok || err != nil || w.ID != "rt-l" || w.Secret == "" || d.Webhook != "rt-l" {
		t.Fatalf("lease: %+v %+v %v %v", d, w, ok, err)
	}
	if _, _, ok, _ := s.LeaseDelivery(ctx, "n2", time.Minute); ok {
		t.Fatal("a leased delivery was leased again before its lease ended")
	}
	clk.Advance(time.Minute + time.Millisecond) // n1 died
	d2, _, ok, _ := s.LeaseDelivery(ctx, "n2", time.Minute)
	if !ok || d2.ID != d.ID {
		t.Fatalf("after the lease ended: %+v %v, want %s again", d2, ok, d.ID)
	}
	if ok, err := s.RecordAttempt(ctx, d.ID, "n1", ""); ok || err != nil {
		t.Fatalf("a stale holder's outcome: %v, %v; want nothing recorded", ok, err)
	}
	if ok, err := s.RecordAttempt(ctx, d.ID, "n2", "HTTP 500"); !ok || err != nil {
		t.Fatalf("record: %v, %v", ok, err)
	}
	ds, _ := s.Deliveries(ctx, "rt-l")
	if len(ds) != 1 || ds[0].Status != rank.DeliveryPending || ds[0].Attempts != 1 || ds[0].LastError != "HTTP 500" ||
		!ds[0].NextAttemptAt.Equal(clk.Now().Add(rank.RetryFirst)) {
		t.Fatalf("after a failed attempt: %+v", ds)
	}
	if _, _, ok, _ := s.LeaseDelivery(ctx, "n2", time.Minute); ok {
		t.Fatal("leased before its next attempt was due")
	}
	clk.Advance(rank.RetryFirst)
	d3, _, ok, _ := s.LeaseDelivery(ctx, "n3", time.Minute)
	if !ok || d3.Attempts != 1 {
		t.Fatalf("due retry: %+v %v", d3, ok)
	}
	if ok, _ := s.RecordAttempt(ctx, d3.ID, "n3", ""); !ok {
		t.Fatal("record of the 2xx")
	}
	ds, _ = s.Deliveries(ctx, "rt-l")
	if ds[0].Status != rank.DeliveryDelivered || ds[0].Attempts != 2 || !ds[0].NextAttemptAt.IsZero() {
		t.Fatalf("after the 2xx: %+v", ds[0])
	}
	clk.Advance(time.Hour)
	if _, _, ok, _ := s.LeaseDelivery(ctx, "n1", time.Minute); ok {
		t.Fatal("a delivered delivery was leased again")
	}
	// Deleting the webhook takes its deliveries with it.
	if _, err := s.AppendOutbox(ctx, "rt-final-2", 0, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteWebhook(ctx, "rt-l"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := s.LeaseDelivery(ctx, "n1", time.Minute); ok {
		t.Fatal("a deleted webhook's delivery was leased")
	}
}

// testOutboxSkip: a lease passes over the webhooks it is told to skip
// (a slow receiver's), however many of their deliveries are due before
// another's; the skipped ones are still there for a lease that does not
// skip them, in the order they fell due, and a retry keeps the queue's
// order by next attempt.
func testOutboxSkip(t *testing.T, f Factory) {
	clk := NewClock(time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC))
	s := f(t, clk.Now)
	ctx := context.Background()
	if _, err := s.PutWebhook(ctx, hook("rt-slow", []string{rank.EventBoardState}, nil)); err != nil {
		t.Fatal(err)
	}
	var slow []string
	for i := range 30 {
		ev := rank.OutboxEvent{Event: rank.EventBoardState, Board: "rt-b" + strconv.Itoa(i), TS: clk.Now(), Data: json.RawMessage(`{"state":"open"}`)}
		if _, err := s.AppendOutbox(ctx, "rt-skip-"+strconv.Itoa(i), 0, ev); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	ds, _ := s.Deliveries(ctx, "rt-slow")
	for i := len(ds) - 1; i >= 0; i-- {
		slow = append(slow, ds[i].ID) // oldest first
	}
	if _, err := s.PutWebhook(ctx, hook("rt-fast", []string{rank.EventBoardFinal}, nil)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	ev := rank.OutboxEvent{Event: rank.EventBoardFinal, Board: "rt-b", TS: clk.Now(), Data: json.RawMessage(`{}`)}
	if _, err := s.AppendOutbox(ctx, "rt-skip-final", 0, ev); err != nil {
		t.Fatal(err)
	}
	d, w, ok, err := s.LeaseDelivery(ctx, "n1", time.Minute, "rt-slow")
	if !ok || err != nil || w.ID != "rt-fast" || d.Webhook != "rt-fast" {
		t.Fatalf("lease skipping rt-slow: %+v %+v %v %v; want rt-fast's, though 30 of rt-slow's fell due first", d, w, ok, err)
	}
	if _, _, ok, err := s.LeaseDelivery(ctx, "n1", time.Minute, "rt-slow"); ok || err != nil {
		t.Fatalf("a second lease skipping rt-slow: %v %v, want nothing (rt-fast's is leased)", ok, err)
	}
	if _, _, ok, _ := s.LeaseDelivery(ctx, "n1", time.Minute, "rt-slow", "rt-fast"); ok {
		t.Fatal("a lease skipping both webhooks took one")
	}
	// Without skipping: rt-slow's, oldest first; a failed attempt goes
	// behind the ones due before its retry.
	first, _, ok, _ := s.LeaseDelivery(ctx, "n2", time.Minute)
	if !ok || first.ID != slow[0] {
		t.Fatalf("lease without skipping: %s %v, want rt-slow's oldest %s", first.ID, ok, slow[0])
	}
	if ok, err := s.RecordAttempt(ctx, first.ID, "n2", "timeout"); !ok || err != nil {
		t.Fatalf("record: %v %v", ok, err)
	}
	next, _, ok, _ := s.LeaseDelivery(ctx, "n2", time.Minute)
	if !ok || next.ID != slow[1] {
		t.Fatalf("after a failed attempt: %s %v, want the next oldest %s", next.ID, ok, slow[1])
	}
}

// testOutboxFails: R28's schedule on the store clock, then failed after
// 24 h; the log keeps the last rank.DeliveryLog, newest first.
func testOutboxFails(t *testing.T, f Factory) {
	start := time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)
	clk := NewClock(start)
	s := f(t, clk.Now)
	ctx := context.Background()
	if _, err := s.PutWebhook(ctx, hook("rt-f", []string{rank.EventBoardState}, nil)); err != nil {
		t.Fatal(err)
	}
	ev := rank.OutboxEvent{Event: rank.EventBoardState, Board: "rt-b", TS: start, Data: json.RawMessage(`{"state":"final"}`)}
	if _, err := s.AppendOutbox(ctx, "rt-s", 0, ev); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	for {
		d, _, ok, err := s.LeaseDelivery(ctx, "n", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			ds, _ := s.Deliveries(ctx, "rt-f")
			if ds[0].Status == rank.DeliveryFailed {
				break
			}
			if ds[0].NextAttemptAt.IsZero() || ds[0].NextAttemptAt.Sub(clk.Now()) > rank.RetryMax {
				t.Fatalf("pending with next attempt %v at %v", ds[0].NextAttemptAt, clk.Now())
			}
			clk.Set(ds[0].NextAttemptAt)
			continue
		}
		attempts++
		if ok, err := s.RecordAttempt(ctx, d.ID, "n", "connection refused"); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	ds, _ := s.Deliveries(ctx, "rt-f")
	if ds[0].Attempts != attempts || ds[0].LastError != "connection refused" || clk.Now().Sub(start) >= rank.RetryFor {
		t.Fatalf("failed after %d attempts at +%s: %+v", attempts, clk.Now().Sub(start), ds[0])
	}
	if attempts < 30 || attempts > 40 {
		t.Fatalf("%d attempts in 24 h; 5 s doubling to 1 h makes about 33", attempts)
	}
	for i := range rank.DeliveryLog + 5 {
		if _, err := s.AppendOutbox(ctx, "rt-many-"+strconv.Itoa(i), 0, ev); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.Deliveries(ctx, "rt-f")
	if err != nil || len(ds) != rank.DeliveryLog {
		t.Fatalf("log of %d, %v; want the last %d", len(ds), err, rank.DeliveryLog)
	}
}
