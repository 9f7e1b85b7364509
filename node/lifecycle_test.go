package node_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// skewed is a settable store clock; the node's own clock stays real.
type skewed struct {
	mu sync.Mutex
	t  time.Time
}

func (c *skewed) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *skewed) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestTournamentLifecycle runs a scheduled board from start to finish on
// one node whose store clock is hours away from its own, on both engines:
// board frames follow the store's clock (R19), events before the start
// and after the grace are board_closed, a late event within grace counts
// (R17), the final standings come in one final top frame, a final board's
// config is 409, and deletion ends the subscription.
func TestTournamentLifecycle(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clk := &skewed{t: time.Now().Add(-5 * time.Hour).Truncate(time.Second)}
			cfg := node.Config{Now: clk.now}
			if engine == "redis" {
				rd := testenv.StartRedis(t)
				rc, err := redisstore.NewClient(rd.URL())
				if err != nil {
					t.Fatal(err)
				}
				cfg.Redis = rc
			}
			r := start(t, cfg)
			adm := token(t, "root", auth.Admin)
			t0 := clk.now()
			startsAt, endsAt := t0.Add(time.Minute), t0.Add(2*time.Minute)
			finalAt := endsAt.Add(30 * time.Second)
			body := fmt.Sprintf(`{"starts_at":%q,"ends_at":%q,"grace":"30s"}`, startsAt.UTC().Format(time.RFC3339), endsAt.UTC().Format(time.RFC3339))
			if st, b := r.rest(t, "PUT", "/api/v1/boards/cup", adm, body); st != 200 {
				t.Fatalf("PUT: %d %s", st, b)
			}
			if st, b := r.rest(t, "GET", "/api/v1/boards/cup", adm, ""); st != 200 || !strings.Contains(b, `"state":"scheduled"`) {
				t.Fatalf("GET: %d %s", st, b)
			}
			sub := subscribe(t, r, "cup", 5)
			waitState := func(want string) proto.Board {
				t.Helper()
				deadline := time.After(5 * time.Second)
				for {
					select {
					case b, ok := <-sub.State():
						if !ok {
							t.Fatalf("subscription ended waiting for %s", want)
						}
						if b.State == want {
							return b
						}
					case <-deadline:
						t.Fatalf("no board frame %q within 5s", want)
					}
				}
			}
			b := waitState("scheduled")
			if b.StartsAt == nil || *b.StartsAt != startsAt.UnixMilli() || b.FinalAt == nil || *b.FinalAt != finalAt.UnixMilli() {
				t.Fatalf("board frame %+v", b)
			}
			post := func(events string) string {
				t.Helper()
				st, b := r.rest(t, "POST", "/api/v1/boards/cup/scores", adm, events)
				if st != 200 {
					t.Fatalf("POST: %d %s", st, b)
				}
				return b
			}
			if b := post(`[{"id":"early","member":"ann","delta":1}]`); !strings.Contains(b, "board_closed") {
				t.Fatalf("before starts_at: %s", b)
			}
			clk.set(startsAt)
			waitState("open")
			post(`[{"id":"e1","member":"ann","delta":5},{"id":"e2","member":"bob","delta":3}]`)
			clk.set(endsAt)
			waitState("closing")
			late := fmt.Sprintf(`[{"id":"late","member":"bob","delta":4,"at":%d},{"id":"after","member":"ann","delta":1}]`, endsAt.UnixMilli()-1)
			if b := post(late); !strings.Contains(b, `"score":7`) || !strings.Contains(b, "board_closed") {
				t.Fatalf("late within grace, then one timed after the end: %s", b)
			}
			clk.set(finalAt)
			waitState("final")
			deadline := time.After(5 * time.Second)
			for final := false; !final; {
				select {
				case f := <-sub.Top():
					if f.Final {
						if len(f.Entries) != 2 || f.Entries[0].Member != "bob" || f.Entries[0].Score != 7 || f.Entries[1].Score != 5 {
							t.Fatalf("final standings %+v", f)
						}
						final = true
					}
				case <-deadline:
					t.Fatal("no final top frame within 5s")
				}
			}
			if st, b := r.rest(t, "PUT", "/api/v1/boards/cup", adm, body); st != 409 || !strings.Contains(b, "board_closed") {
				t.Fatalf("PUT of a final board: %d %s", st, b)
			}
			if st, b := r.rest(t, "DELETE", "/api/v1/boards/cup", adm, ""); st != 204 && st != 200 {
				t.Fatalf("DELETE: %d %s", st, b)
			}
			waitState("deleted")
			// The subscription is over: its channels close after "deleted".
			select {
			case b, ok := <-sub.State():
				if ok {
					t.Fatalf("a board frame after deleted: %+v", b)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the subscription did not end")
			}
		})
	}
}
