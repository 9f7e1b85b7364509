package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/ranktest"
	"github.com/wsgateway/wsgateway/rank/redisstore"
	"github.com/wsgateway/wsgateway/webhook"
)

const secret = "a-secret-of-24-bytes-xyz"

// received is what a receiver saw of one request.
type received struct {
	header http.Header
	body   []byte
}

// receiver answers each request with the next of codes (then 200) and
// keeps what it got.
type receiver struct {
	mu    sync.Mutex
	codes []int
	got   []received
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, received{req.Header.Clone(), body})
	code := http.StatusOK
	if len(r.codes) > 0 {
		code, r.codes = r.codes[0], r.codes[1:]
	}
	r.mu.Unlock()
	w.WriteHeader(code)
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// engine is the named engine on clock clk.
func engine(t *testing.T, name string, clk *ranktest.Clock) webhook.Store {
	if name == "memory" {
		mem, err := memstore.New(rank.Hooks{}, memstore.Config{Now: clk.Now, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mem.Close() })
		return mem
	}
	srv := testenv.StartRedis(t)
	client, err := redisstore.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := redisstore.New(context.Background(), client, rank.Hooks{}, redisstore.Config{Now: clk.Now, HotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return rs
}

// TestRetriedUntil2xx: the receiver answers 500 twice, then 200: three
// attempts on R28's schedule (the store's injected clock), one delivery
// id, each signed, and the log shows delivered after 3.
func TestRetriedUntil2xx(t *testing.T) {
	start := time.Date(2030, 6, 7, 8, 0, 0, 0, time.UTC)
	for _, name := range []string{"memory", "redis"} {
		t.Run(name, func(t *testing.T) {
			clk := ranktest.NewClock(start)
			store := engine(t, name, clk)
			rcv := &receiver{codes: []int{500, 500}}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			ctx := context.Background()
			if _, err := store.PutWebhook(ctx, rank.Webhook{ID: "w", URL: srv.URL + "/hook", Secret: secret, Events: []string{rank.EventBoardFinal}}); err != nil {
				t.Fatal(err)
			}
			data := json.RawMessage(`{"standings":[{"rank":1,"member":"alice","score":9}],"total":1,"rewards":[{"member":"alice","reward":"gold"}]}`)
			if ok, err := store.AppendOutbox(ctx, "b|final", 0, rank.OutboxEvent{Event: rank.EventBoardFinal, Board: "b", TS: start, Data: data}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			d, err := webhook.New(store, nil, webhook.Config{Node: "n1", AllowPrivate: true})
			if err != nil {
				t.Fatal(err)
			}
			step := func(want bool) {
				t.Helper()
				did, err := d.Step(ctx)
				if err != nil || did != want {
					t.Fatalf("step at +%s: did %v, %v; want %v", clk.Now().Sub(start), did, err, want)
				}
			}
			step(true) // 500
			step(false)
			clk.Advance(rank.RetryFirst - time.Millisecond)
			step(false) // not due yet
			clk.Advance(time.Millisecond)
			step(true) // 500
			clk.Advance(2*rank.RetryFirst - time.Millisecond)
			step(false)
			clk.Advance(time.Millisecond)
			step(true) // 200
			clk.Advance(time.Hour)
			step(false)

			got := rcv.requests()
			if len(got) != 3 {
				t.Fatalf("receiver got %d requests, want 3", len(got))
			}
			id := got[0].header.Get("X-LB-Delivery")
			for i, r := range got {
				h := r.header
				if h.Get("X-LB-Delivery") != id || id == "" {
					t.Fatalf("attempt %d: delivery id %q, first %q", i+1, h.Get("X-LB-Delivery"), id)
				}
				if h.Get("X-LB-Event") != rank.EventBoardFinal {
					t.Fatalf("attempt %d: X-LB-Event %q", i+1, h.Get("X-LB-Event"))
				}
				if !webhook.Verify(secret, h.Get("X-LB-Timestamp"), r.body, h.Get("X-LB-Signature")) {
					t.Fatalf("attempt %d: signature %q does not verify", i+1, h.Get("X-LB-Signature"))
				}
				// The contract's recipe, written out apart from Sign.
				m := hmac.New(sha256.New, []byte(secret))
				m.Write([]byte(h.Get("X-LB-Timestamp") + "." + string(r.body)))
				if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); h.Get("X-LB-Signature") != want {
					t.Fatalf("attempt %d: signature %q, want %q", i+1, h.Get("X-LB-Signature"), want)
				}
				if webhook.Verify("another-secret-of-16", h.Get("X-LB-Timestamp"), r.body, h.Get("X-LB-Signature")) {
					t.Fatal("a signature verified with another secret")
				}
				var p struct {
					ID, Event, Board string
					TS               int64
					Data             json.RawMessage
				}
				if err := json.Unmarshal(r.body, &p); err != nil || p.ID != id || p.Event != rank.EventBoardFinal ||
					p.Board != "b" || p.TS != start.UnixMilli() || string(p.Data) != string(data) {
					t.Fatalf("attempt %d: body %s (%v)", i+1, r.body, err)
				}
			}
			if ts, want := got[2].header.Get("X-LB-Timestamp"), strconv.FormatInt(start.Add(3*rank.RetryFirst).Unix(), 10); ts != want {
				t.Fatalf("third attempt's timestamp %s: want the store clock's unix seconds", ts)
			}
			ds, err := store.Deliveries(ctx, "w")
			if err != nil || len(ds) != 1 || ds[0].ID != id || ds[0].Status != rank.DeliveryDelivered || ds[0].Attempts != 3 || ds[0].LastError != "" {
				t.Fatalf("log %+v, %v: want one delivered after 3 attempts", ds, err)
			}
		})
	}
}

// TestRefusesPrivateTarget: without AllowPrivate the dial to the loopback
// receiver is refused by the address dialled, and the attempt says so.
func TestRefusesPrivateTarget(t *testing.T) {
	clk := ranktest.NewClock(time.Date(2030, 6, 7, 8, 0, 0, 0, time.UTC))
	store, _ := memstore.New(rank.Hooks{}, memstore.Config{Now: clk.Now, SweepInterval: -1})
	defer store.Close()
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx := context.Background()
	// A public-looking name in the stored URL resolving to loopback is what
	// Control catches; the stored URL here is the loopback one itself.
	if _, err := store.PutWebhook(ctx, rank.Webhook{ID: "w", URL: srv.URL, Secret: secret, Events: []string{rank.EventBoardState}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AppendOutbox(ctx, "m", 0, rank.OutboxEvent{Event: rank.EventBoardState, Board: "b", TS: clk.Now(), Data: json.RawMessage(`{"state":"final"}`)}); err != nil {
		t.Fatal(err)
	}
	d, err := webhook.New(store, nil, webhook.Config{Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if did, err := d.Step(ctx); !did || err != nil {
		t.Fatal(did, err)
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
	ds, _ := store.Deliveries(ctx, "w")
	if len(ds) != 1 || ds[0].Status != rank.DeliveryPending || !strings.Contains(ds[0].LastError, "refused") {
		t.Fatalf("log %+v: want a refused attempt", ds)
	}
}

// blackHole accepts connections and reads them, never answering: a
// receiver that holds every attempt until its timeout.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	open  int // connections held now
	most  int // the most held at once
	conns []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.open++
			b.most = max(b.most, b.open)
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			go func() {
				_, _ = io.Copy(io.Discard, c) // until the attempt gives up
				b.mu.Lock()
				b.open--
				b.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	return b
}

func (b *blackHole) held() (open, most int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open, b.most
}

// TestBlackHoleDelaysNoOther (R28's first attempt within 5 s, for every
// receiver): a receiver that never answers, whose deliveries fell due
// first, holds its own PerWebhook slots only; another webhook's 20
// deliveries all arrive while it holds them (its attempts last an hour
// here, so with the slots shared none would), both engines.
func TestBlackHoleDelaysNoOther(t *testing.T) {
	for _, name := range []string{"memory", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := ranktest.NewClock(time.Date(2030, 6, 7, 8, 0, 0, 0, time.UTC))
			store := engine(t, name, clk)
			hole := newBlackHole(t)
			rcv := &receiver{}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := store.PutWebhook(ctx, rank.Webhook{ID: "hole", URL: "http://" + hole.ln.Addr().String() + "/", Secret: secret, Events: []string{rank.EventBoardState}}); err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				ev := rank.OutboxEvent{Event: rank.EventBoardState, Board: "b" + strconv.Itoa(i), TS: clk.Now(), Data: json.RawMessage(`{"state":"final"}`)}
				if _, err := store.AppendOutbox(ctx, "hole-"+strconv.Itoa(i), 0, ev); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(time.Second) // the healthy receiver's deliveries fall due after every one of the hole's
			if _, err := store.PutWebhook(ctx, rank.Webhook{ID: "ok", URL: srv.URL + "/hook", Secret: secret, Events: []string{rank.EventBoardFinal}}); err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				ev := rank.OutboxEvent{Event: rank.EventBoardFinal, Board: "b" + strconv.Itoa(i), TS: clk.Now(), Data: json.RawMessage(`{}`)}
				if _, err := store.AppendOutbox(ctx, "ok-"+strconv.Itoa(i), 0, ev); err != nil {
					t.Fatal(err)
				}
			}
			d, err := webhook.New(store, nil, webhook.Config{Node: "n1", AllowPrivate: true, Workers: 4, PerWebhook: 2,
				Timeout: time.Hour, Poll: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			testenv.Until(t, 30*time.Second, "the healthy receiver's 20 deliveries recorded delivered", func() bool {
				ds, _ := store.Deliveries(ctx, "ok")
				n := 0
				for _, x := range ds {
					if x.Status == rank.DeliveryDelivered {
						n++
					}
				}
				return len(rcv.requests()) >= 20 && n == 20
			})
			testenv.Until(t, 10*time.Second, "the black hole holding its 2 slots", func() bool { open, _ := hole.held(); return open == 2 })
			if open, most := hole.held(); open != 2 || most != 2 {
				t.Fatalf("the black hole holds %d attempts (at most %d at once), want its 2 slots", open, most)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
