package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// TestEraseMember: DELETE /api/v1/members/{member} erases the member from
// every board, answers the boards and entries removed and whether a
// profile and a global ban were, re-reads the boards that changed, tells
// member.erased; a member the store holds nothing of (never seen, or
// erased already) is a 404 not_found and tells no webhook, and a member
// with a profile only is found. Only an admin with a token for every
// board may.
func TestEraseMember(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		store := eng.new(t)
		e := newEnv(t, store, func(c *setup) { c.WebhookAllowPrivate = true })
		adm, srv := adminToken(t), serverToken(t)
		e.putBoard("b1", `{}`)
		e.putBoard("b2", `{"reset":"daily","history":5}`)
		e.putBoard("b3", `{}`)
		e.do("PUT", "/api/v1/webhooks/gone", adm, `{"url":"http://127.0.0.1:9/","secret":"0123456789abcdef","events":["member.erased"]}`).wantStatus(t, 200)
		e.scores("b1", `[{"member":"eve","delta":5,"id":"e1"},{"member":"bob","delta":9,"id":"b1"}]`)
		e.scores("b2", `[{"member":"eve","delta":7,"id":"e2","meta":{"car":"red"}}]`)
		e.scores("b3", `[{"member":"bob","delta":1,"id":"b3"}]`)
		e.do("PUT", "/api/v1/members/eve/profile", srv, `{"name":"Eve"}`).wantStatus(t, 200)

		x := e.do("GET", "/api/v1/members/eve/export", adm, "")
		x.wantStatus(t, 200)
		var ex struct {
			Member  string
			Profile *rank.Profile
			Entries []struct {
				Board string
				Score int64
				Rank  int64
				Meta  json.RawMessage
			}
			History []map[string]any
			Bans    []any
		}
		if err := json.Unmarshal(x.body, &ex); err != nil || ex.Member != "eve" || ex.Profile == nil || ex.Profile.Name != "Eve" ||
			len(ex.Entries) != 2 || len(ex.History) != 1 || ex.History[0]["id"] != "e2" || ex.Bans == nil {
			t.Fatalf("export %s: %v", x.body, err)
		}

		before := len(e.boardEvents())
		r := e.do("DELETE", "/api/v1/members/eve", adm, "")
		r.wantStatus(t, 200)
		if string(r.body) != `{"boards":2,"entries":2,"records":2,"profile":true,"global_ban":false,"done":true}` {
			t.Fatalf("erase answered %s, want boards 2, entries 2, records 2, the profile, done", r.body)
		}
		var changed []string
		for _, be := range e.boardEvents()[before:] {
			changed = append(changed, be.board)
		}
		slices.Sort(changed)
		if !slices.Equal(changed, []string{"b1", "b2"}) {
			t.Fatalf("boards re-read after the erasure: %v, want b1 and b2", changed)
		}
		ds, err := store.Deliveries(context.Background(), "gone")
		if err != nil || len(ds) != 1 || ds[0].Event != rank.EventMemberErased || ds[0].Board != "" || string(ds[0].Data) != `{"member":"eve"}` {
			t.Fatalf("deliveries %+v, %v", ds, err)
		}
		e.do("GET", "/api/v1/members/eve/profile", adm, "").wantError(t, 404, "not_found")
		x = e.do("GET", "/api/v1/members/eve/export", adm, "")
		if x.status != 200 || string(x.body) != `{"bans":[],"entries":[],"history":[],"member":"eve","profile":null}` {
			t.Fatalf("export after the erasure: %d %s", x.status, x.body)
		}
		// Its old id is applied anew, from zero.
		acks := e.scores("b1", `[{"member":"eve","delta":2,"id":"e1"}]`)
		if len(acks) != 1 || acks[0].Duplicate || acks[0].Score != 2 {
			t.Fatalf("old id after the erasure: %+v", acks)
		}

		e.do("DELETE", "/api/v1/members/nobody", adm, "").wantError(t, 404, "not_found")
		e.do("DELETE", "/api/v1/members/eve", adm, "").wantStatus(t, 200)             // the score sent after the erasure
		e.do("DELETE", "/api/v1/members/eve", adm, "").wantError(t, 404, "not_found") // again: nothing left
		e.do("PUT", "/api/v1/members/ghost/profile", srv, `{"name":"Ghost"}`).wantStatus(t, 200)
		if r := e.do("DELETE", "/api/v1/members/ghost", adm, ""); r.status != 200 || string(r.body) != `{"boards":0,"entries":0,"records":0,"profile":true,"global_ban":false,"done":true}` {
			t.Fatalf("erase of a member with a profile only: %d %s", r.status, r.body)
		}
		e.do("PUT", "/api/v1/bans/mallory", adm, `{"reason":"spam"}`).wantStatus(t, 200)
		if r := e.do("DELETE", "/api/v1/members/mallory", adm, ""); r.status != 200 || !json.Valid(r.body) || !strings.Contains(string(r.body), `"global_ban":true`) {
			t.Fatalf("erase of a member with a global ban only: %d %s", r.status, r.body)
		}
		if ds, err := store.Deliveries(context.Background(), "gone"); err != nil || len(ds) != 4 {
			t.Fatalf("deliveries %+v, %v: want member.erased for eve (twice), ghost and mallory, none for unknown members", ds, err)
		}
		e.do("DELETE", "/api/v1/members/bad%20id", adm, "").wantError(t, 400, "invalid_member")
		for _, p := range []string{"/api/v1/members/bob", "/api/v1/members/bob/export"} {
			method := "DELETE"
			if p != "/api/v1/members/bob" {
				method = "GET"
			}
			e.do(method, p, "", "").wantError(t, 401, "unauthorized")
			e.do(method, p, srv, "").wantError(t, 403, "forbidden")
			e.do(method, p, token(t, "mod", auth.Admin, []string{"b1"}), "").wantError(t, 403, "forbidden")
		}
		if r := e.do("GET", "/api/v1/boards/b1/members/bob", adm, ""); r.status != 200 {
			t.Fatalf("bob after refused erasures: %d %s", r.status, r.body)
		}
	})
}

// TestEraseResumesOverREST: on a board whose bucket of idempotency records
// holds 200,000 fields and an erasure budget of 40 ms (Config.EraseBudget;
// the store looks at 500 fields a call), DELETE answers 202 with done
// false and what it did so far, Retry-After, and no member.erased yet; the
// same DELETE again goes on, and the last answers 200 with done true, the
// counts of the whole erasure, and member.erased appended once.
func TestEraseResumesOverREST(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	client, err := redisstore.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	store, err := redisstore.New(context.Background(), client, rank.Hooks{}, redisstore.Config{EraseChunk: 500})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := newEnv(t, store, func(c *setup) { c.EraseBudget = 40 * time.Millisecond; c.WebhookAllowPrivate = true })
	adm := adminToken(t)
	e.putBoard("busy", `{}`)
	e.do("PUT", "/api/v1/webhooks/gone", adm, `{"url":"http://127.0.0.1:9/","secret":"0123456789abcdef","events":["member.erased"]}`).wantStatus(t, 200)
	e.scores("busy", `[{"member":"eve","delta":5,"id":"e1"},{"member":"bob","delta":9,"id":"b1"}]`)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	ctx := context.Background()
	buckets, err := rc.Keys(ctx, "lb:{busy}:r:*").Result()
	if err != nil || len(buckets) != 1 {
		t.Fatalf("buckets %v, %v", buckets, err)
	}
	for start := 0; start < 200000; start += 10000 {
		pipe := rc.Pipeline()
		for i := start; i < start+10000; i++ {
			m := "p" + strconv.Itoa(i)
			if i%1000 == 0 {
				m = "eve"
			}
			pipe.HSet(ctx, buckets[0], m+"|x"+strconv.Itoa(i), "r")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var body struct {
		Boards  int   `json:"boards"`
		Entries int64 `json:"entries"`
		Records int64 `json:"records"`
		Done    bool  `json:"done"`
	}
	partial := 0
	// A loaded machine may do one 500-record chunk per 40 ms request: 400
	// requests for the 200,000; the cap only catches an erasure that stops
	// making progress.
	for i := 0; ; i++ {
		if i > 2000 {
			t.Fatalf("not done after %d requests: %+v", i, body)
		}
		r := e.do("DELETE", "/api/v1/members/eve", adm, "")
		r.json(t, &body)
		if r.status == 200 {
			break
		}
		if r.status != 202 || body.Done || r.header.Get("Retry-After") == "" {
			t.Fatalf("answer %d %s (Retry-After %q), want 202 with done false", r.status, r.body, r.header.Get("Retry-After"))
		}
		if ds, _ := store.Deliveries(ctx, "gone"); len(ds) != 0 {
			t.Fatalf("member.erased appended before the erasure was done: %+v", ds)
		}
		partial++
	}
	if partial == 0 {
		t.Fatal("done at the first request: the budget did not cut the erasure short")
	}
	t.Logf("done after %d answers 202", partial)
	if !body.Done || body.Boards != 1 || body.Entries != 1 || body.Records != 201 {
		t.Fatalf("the last answer %+v, want 1 board, 1 entry, 201 records, done", body)
	}
	if ds, _ := store.Deliveries(ctx, "gone"); len(ds) != 1 || ds[0].Event != rank.EventMemberErased {
		t.Fatalf("deliveries %+v, want one member.erased", ds)
	}
	if n, _ := rc.HLen(ctx, buckets[0]).Result(); n != 200000-200+1 {
		t.Fatalf("%d records left, want the others' and bob's", n)
	}
}
