package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

func TestR1Auth(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) { c.AllowedOrigins = []string{"game.example"} }})
		good := in.token(t, "alice", auth.Player)
		other := auth.Claims{Sub: "alice", TTL: time.Hour}
		badSig, err := auth.MintHS256([]byte("another-secret-another-secret-another"), other)
		if err != nil {
			t.Fatal(err)
		}

		t.Run("refused before upgrade", func(t *testing.T) {
			for _, tc := range []struct {
				name, token, origin string
				status              int
				code                string
			}{
				{"missing", "", "", 401, proto.CodeUnauthorized},
				{"malformed", "not.a.jwt", "", 401, proto.CodeUnauthorized},
				{"bad signature", badSig, "", 401, proto.CodeUnauthorized},
				{"expired", in.tokenTTL(t, "alice", auth.Player, -time.Hour), "", 401, proto.CodeTokenExpired},
				{"origin", good, "https://evil.example", 403, proto.CodeForbidden},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, resp, err := g.dialErr(tc.token, dialOptions{origin: tc.origin})
					if err == nil || resp == nil {
						t.Fatalf("dial succeeded (err %v)", err)
					}
					if resp.StatusCode != tc.status {
						t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
					}
					var body proto.ErrorBody
					if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
						t.Fatalf("body: %v", err)
					}
					if body.Error.Code != tc.code {
						t.Fatalf("code %q, want %q", body.Error.Code, tc.code)
					}
				})
			}
		})

		t.Run("carriers", func(t *testing.T) {
			for _, carrier := range []string{"header", "subprotocol", "query"} {
				c, resp, err := g.dialErr(good, dialOptions{carrier: carrier, origin: "https://game.example"})
				if err != nil {
					t.Fatalf("%s: %v", carrier, err)
				}
				if got := c.ws.Subprotocol(); got != proto.Subprotocol {
					t.Errorf("%s: subprotocol %q", carrier, got)
				}
				if h := resp.Header.Get("Sec-WebSocket-Protocol"); strings.Contains(h, "bearer") {
					t.Errorf("%s: token echoed in %q", carrier, h)
				}
				w := c.welcome
				if w.Member != "alice" || w.Role != "player" || w.Node != "n1" || w.Exp == 0 ||
					w.Limits.MaxMessage != 4096 || w.Limits.Rate != 50 || w.ServerTime == 0 {
					t.Errorf("%s: welcome %+v", carrier, w)
				}
			}
		})

		t.Run("expiry closes 4001", func(t *testing.T) {
			t.Parallel()
			c := g.dial(in.tokenTTL(t, "bob", auth.Player, time.Second))
			m, err := c.read(5 * time.Second)
			if err != nil || m.Type != proto.TypeError || m.Code != proto.CodeTokenExpired {
				t.Fatalf("got %v %v, want error token_expired", m, err)
			}
			if code := c.closeStatus(5 * time.Second); code != proto.CloseTokenExpired {
				t.Fatalf("close %d, want 4001", code)
			}
		})

		t.Run("auth moves the expiry", func(t *testing.T) {
			t.Parallel()
			g.board("r1auth", nil)
			// exp has whole seconds: 4s leaves at least 3s to send auth,
			// time enough on a loaded machine.
			c := g.dial(in.tokenTTL(t, "carol", auth.Player, 4*time.Second))
			first := time.Unix(c.welcome.Exp, 0)
			fresh := in.token(t, "carol", auth.Player)
			a := as[proto.Authed](t, c.expectOK(proto.TypeAuthed, proto.TypeAuth, map[string]any{"token": fresh}))
			if a.Exp <= c.welcome.Exp {
				t.Fatalf("authed exp %d not after %d", a.Exp, c.welcome.Exp)
			}
			c.expectError(proto.CodeForbidden, proto.TypeAuth, map[string]any{"token": in.token(t, "mallory", auth.Player)})
			c.expectError(proto.CodeUnauthorized, proto.TypeAuth, map[string]any{"token": "garbage"})
			// Past the first token's expiry the connection still serves.
			for time.Now().Before(first.Add(1500 * time.Millisecond)) {
				c.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": "r1auth"})
				time.Sleep(100 * time.Millisecond) // pacing requests, not waiting for an outcome
			}
		})
	})
}

func TestR2Pipelining(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("pipe", nil)
		c := g.dial(in.token(t, "srv", auth.Server))
		var ids []string
		for i := range 60 {
			id := fmt.Sprintf("p%d", i)
			ids = append(ids, id)
			switch i % 3 {
			case 0:
				c.send(proto.TypeScore, id, map[string]any{"board": "pipe", "member": fmt.Sprintf("m%d", i%7), "delta": i})
			case 1:
				c.send(proto.TypePage, id, map[string]any{"board": "pipe", "limit": 5})
			case 2:
				c.send(proto.TypeRank, id, map[string]any{"board": "pipe", "member": "m0", "around": 2})
			}
		}
		for i, id := range ids {
			m := c.next()
			if m.ID != id || m.Type == proto.TypeError {
				t.Fatalf("reply %d: %s, want the reply to %s", i, m, id)
			}
		}
	})
}

func TestR3AckFromSameStep(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("atomic", nil)
		type ev struct {
			member string
			delta  int64
			ack    proto.Ack
		}
		var mu sync.Mutex
		var all []ev
		var wg sync.WaitGroup
		for w := range 6 {
			c := g.dial(in.token(t, fmt.Sprintf("srv%d", w), auth.Server))
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for range 25 {
					e := ev{member: fmt.Sprintf("m%d", r.IntN(8)), delta: 1 + r.Int64N(20)}
					id := c.id()
					c.send(proto.TypeScore, id, map[string]any{"board": "atomic", "member": e.member, "delta": e.delta})
					m, err := c.read(10 * time.Second)
					if err != nil || m.Type != proto.TypeAck {
						t.Errorf("score: %v %v", m, err)
						return
					}
					e.ack = as[proto.Ack](t, m)
					mu.Lock()
					all = append(all, e)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		// Replay in seq order: each ack's score and rank are the model's
		// right after that event (tiebreak first: earlier reach ranks higher).
		sort.Slice(all, func(i, j int) bool { return all[i].ack.Seq < all[j].ack.Seq })
		type st struct{ score, reached int64 }
		model := map[string]st{}
		for i, e := range all {
			if i > 0 && e.ack.Seq != all[i-1].ack.Seq+1 {
				t.Fatalf("seq gap: %d after %d", e.ack.Seq, all[i-1].ack.Seq)
			}
			s := model[e.member]
			s.score += e.delta
			s.reached = e.ack.Seq
			model[e.member] = s
			rk := int64(1)
			for m, o := range model {
				if m != e.member && (o.score > s.score || o.score == s.score && o.reached < s.reached) {
					rk++
				}
			}
			if e.ack.Score != s.score || e.ack.Rank != rk {
				t.Fatalf("seq %d %s: ack score %d rank %d, model %d %d", e.ack.Seq, e.member, e.ack.Score, e.ack.Rank, s.score, rk)
			}
		}
	})
}

func TestR4Idempotency(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("idem", nil)
		c := g.dial(in.token(t, "dave", auth.Player))
		f := map[string]any{"board": "idem", "delta": 7}
		c.send(proto.TypeScore, "same", f)
		first := as[proto.Ack](t, c.reply("same"))
		c.send(proto.TypeScore, "same", f)
		again := as[proto.Ack](t, c.reply("same"))
		if first.Duplicate || !again.Duplicate {
			t.Fatalf("duplicate flags %v %v", first.Duplicate, again.Duplicate)
		}
		again.Duplicate = false
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("repeat answered %+v, first %+v", again, first)
		}
		c.send(proto.TypeScore, "same", map[string]any{"board": "idem", "delta": 8})
		if m := c.reply("same"); m.Code != proto.CodeIdempotencyConflict {
			t.Fatalf("other payload: %s", m)
		}
		// A new connection of the same member re-sending the id is safe.
		c2 := g.dial(in.token(t, "dave", auth.Player))
		c2.send(proto.TypeScore, "same", f)
		if a := as[proto.Ack](t, c2.reply("same")); !a.Duplicate || a.Score != 7 {
			t.Fatalf("re-send on a new connection: %+v", a)
		}
		if p := g.top("idem", 10); p.Total != 1 || p.Entries[0].Score != 7 {
			t.Fatalf("board %+v, want dave at 7", p)
		}
	})
}

func TestR5OrderAndTies(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		c := g.dial(in.token(t, "srv", auth.Server))
		// Events in this order: a=10, b=20, c=10, d=20.
		events := []struct {
			m string
			v int64
		}{{"a", 10}, {"b", 20}, {"c", 10}, {"d", 20}}
		for _, tc := range []struct {
			order    rank.Order
			tiebreak rank.Tiebreak
			members  []string
			ranks    []int64
		}{
			{rank.Desc, rank.First, []string{"b", "d", "a", "c"}, []int64{1, 2, 3, 4}},
			{rank.Desc, rank.Last, []string{"d", "b", "c", "a"}, []int64{1, 2, 3, 4}},
			{rank.Asc, rank.First, []string{"a", "c", "b", "d"}, []int64{1, 2, 3, 4}},
			{rank.Desc, rank.Shared, []string{"d", "b", "c", "a"}, []int64{1, 1, 3, 3}},
		} {
			id := fmt.Sprintf("ties-%s-%s", tc.order, tc.tiebreak)
			g.board(id, func(b *rank.Board) { b.Order, b.Tiebreak = tc.order, tc.tiebreak })
			for _, e := range events {
				c.score(id, e.m, e.v)
			}
			p := as[proto.PageReply](t, c.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": id}))
			var members []string
			var ranks []int64
			for _, e := range p.Entries {
				members = append(members, e.Member)
				ranks = append(ranks, e.Rank)
			}
			if !reflect.DeepEqual(members, tc.members) || !reflect.DeepEqual(ranks, tc.ranks) {
				t.Errorf("%s: members %v ranks %v, want %v %v", id, members, ranks, tc.members, tc.ranks)
			}
		}
	})
}

func TestR6ScoreRange(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("range", nil)
		g.board("capped", func(b *rank.Board) { b.MaxDelta = 100 })
		g.board("best", func(b *rank.Board) { b.Mode = rank.Best })
		c := g.dial(in.token(t, "srv", auth.Server))
		c.score("range", "x", 5)
		for _, tc := range []struct {
			raw  string
			code string
		}{
			{`1.5`, proto.CodeInvalidScore},
			{`1e3`, proto.CodeInvalidScore},
			{`"10"`, proto.CodeInvalidScore},
			{`null`, proto.CodeInvalidScore},
			{`9007199254740992`, proto.CodeInvalidScore},
			{`-9007199254740992`, proto.CodeInvalidScore},
			{`9007199254740991`, proto.CodeOutOfRange}, // 5 + (2^53-1)
		} {
			id := c.id()
			c.sendRaw(`{"type":"score","id":"` + id + `","board":"range","member":"x","delta":` + tc.raw + `}`)
			if m := c.reply(id); m.Code != tc.code {
				t.Errorf("delta %s: %s, want %s", tc.raw, m, tc.code)
			}
		}
		c.expectError(proto.CodeDeltaTooLarge, proto.TypeScore, map[string]any{"board": "capped", "member": "x", "delta": 101})
		c.expectError(proto.CodeBadRequest, proto.TypeScore, map[string]any{"board": "best", "member": "x", "delta": 1})
		c.expectError(proto.CodeBadRequest, proto.TypeScore, map[string]any{"board": "range", "member": "x", "value": 1})
		top := as[proto.Ack](t, c.expectOK(proto.TypeAck, proto.TypeScore, map[string]any{"board": "best", "member": "y", "value": rank.MaxScore}))
		if top.Score != rank.MaxScore {
			t.Errorf("max value round trip: %d", top.Score)
		}
		p := g.top("range", 10)
		if p.Total != 1 || p.Entries[0].Score != 5 || p.Seq != 1 {
			t.Fatalf("failed events changed the board: %+v", p)
		}
	})
}

func TestR7TopFrames(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{interval: 100 * time.Millisecond})
		g.board("live", nil)
		w := g.dial(in.token(t, "srv", auth.Server))
		w.score("live", "early", 1)
		s := g.dial(in.token(t, "spec", auth.Spectator))
		id := s.id()
		s.send(proto.TypeSubscribe, id, map[string]any{"board": "live", "top": 3})
		if m := s.next(); m.Type != proto.TypeSubscribed || m.ID != id {
			t.Fatalf("first reply %s, want subscribed", m)
		}
		// R19: the board frame comes between subscribed and the first top.
		if m := s.next(); m.Type != proto.TypeBoard || as[proto.Board](t, m).State != "open" {
			t.Fatalf("after subscribed: %s, want a board frame", m)
		}
		m := s.next()
		if m.Type != proto.TypeTop {
			t.Fatalf("after subscribed: %s, want a top frame", m)
		}
		first := as[proto.Top](t, m)
		if len(first.Entries) != 1 || first.Entries[0].Member != "early" || first.Total != 1 {
			t.Fatalf("first frame %s", m)
		}
		// A burst of events: frames coalesce, the latest state arrives.
		const n = 40
		for i := range n {
			w.score("live", fmt.Sprintf("p%d", i%6), int64(i+1))
		}
		want := g.top("live", 3)
		lastSeq, frames := first.Seq, 1
		deadline := time.Now().Add(5 * time.Second)
		for {
			m, err := s.read(time.Until(deadline))
			if err != nil {
				t.Fatalf("no frame equal to the store's top-3 %+v (last seq %d): %v", want.Entries, lastSeq, err)
			}
			if m.Type != proto.TypeTop {
				continue
			}
			frames++
			f := as[proto.Top](t, m)
			if f.Seq < lastSeq {
				t.Fatalf("seq went back: %d after %d", f.Seq, lastSeq)
			}
			lastSeq = f.Seq
			if f.Seq == want.Seq && f.Total == want.Total && sameEntries(f.Entries, want.Entries) {
				break
			}
		}
		if frames > n {
			t.Errorf("%d frames for %d events: no coalescing", frames, n)
		}
	})
}

func sameEntries(a []proto.Entry, b []rank.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != proto.Entry(b[i]) {
			return false
		}
	}
	return true
}

func TestR8ViewFrames(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("view", nil)
		srv := g.dial(in.token(t, "srv", auth.Server))
		for i, m := range []string{"a", "b", "watcher", "c", "d"} {
			srv.score("view", m, int64(100-10*i))
		}
		w := g.dial(in.token(t, "watcher", auth.Player))
		id := w.id()
		w.send(proto.TypeSubscribe, id, map[string]any{"board": "view", "top": 0, "around": 1})
		if m := w.next(); m.Type != proto.TypeSubscribed {
			t.Fatalf("got %s, want subscribed", m)
		}
		if m := w.next(); m.Type != proto.TypeBoard {
			t.Fatalf("got %s, want the board frame (R19)", m)
		}
		v := as[proto.View](t, w.next())
		if v.Type != proto.TypeView || v.Member != "watcher" || v.Rank == nil || *v.Rank != 3 || len(v.Around) != 3 {
			t.Fatalf("first view %+v", v)
		}
		// d overtakes the watcher: its rank and window change.
		srv.score("view", "d", 50)
		testenv.Until(t, 5*time.Second, "a view frame with rank 4", func() bool {
			m, ok := w.nextFrame(proto.TypeView, 5*time.Second)
			if !ok {
				t.Fatal("no view frame after being overtaken")
			}
			v = as[proto.View](t, m)
			return v.Rank != nil && *v.Rank == 4
		})
		if v.Around[0].Member != "b" || v.Around[1].Member != "watcher" || v.Around[2].Member != "c" {
			t.Fatalf("around after overtaking %+v", v.Around)
		}
	})
}

func TestR10Limits(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) { c.MaxMessage = 256; c.Rate = 5 }})
		g.board("lim", nil)
		tok := in.token(t, "pat", auth.Player)
		write := func(c *wsClient, typ websocket.MessageType, b []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.ws.Write(ctx, typ, b); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			name string
			typ  websocket.MessageType
			body []byte
			want websocket.StatusCode
		}{
			{"too big", websocket.MessageText, []byte(`{"type":"page","id":"x","board":"` + strings.Repeat("a", 300) + `"}`), websocket.StatusMessageTooBig},
			{"binary", websocket.MessageBinary, []byte(`{"type":"page","id":"x","board":"lim"}`), websocket.StatusUnsupportedData},
			{"invalid utf-8", websocket.MessageText, []byte("{\"type\":\"page\",\"id\":\"x\",\"board\":\"\xff\xfe\"}"), websocket.StatusInvalidFramePayloadData},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := g.dial(tok)
				write(c, tc.typ, tc.body)
				if code := c.closeStatus(5 * time.Second); code != tc.want {
					t.Fatalf("close %d, want %d", code, tc.want)
				}
			})
		}

		t.Run("bad requests", func(t *testing.T) {
			c := g.dial(in.token(t, "srv", auth.Server)) // not rate limited
			c.sendRaw(`{"type":"page","id":"a1","board":`)
			if m := c.next(); m.Code != proto.CodeBadRequest || m.ID != "" {
				t.Fatalf("malformed: %s", m)
			}
			c.expectError(proto.CodeBadRequest, "dance", nil)
			c.expectError(proto.CodeBadRequest, proto.TypeScore, map[string]any{"delta": 1})
			c.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": "lim"}) // still open
			for i := range 10 {
				c.sendRaw(`{"type":"page","id":"b` + fmt.Sprint(i) + `","Board":"lim"}`)
			}
			if code := c.closeStatus(5 * time.Second); code != websocket.StatusPolicyViolation {
				t.Fatalf("ten bad requests: close %d, want 1008", code)
			}
		})

		t.Run("rate", func(t *testing.T) {
			c := g.dial(tok)
			if c.welcome.Limits.Rate != 5 {
				t.Fatalf("welcome limits %+v", c.welcome.Limits)
			}
			// Burst 2×5 passes; the next is limited with a retry hint.
			var limited msg
			for i := range 40 {
				m := c.call(proto.TypePage, map[string]any{"board": "lim"})
				if m.Type == proto.TypeError {
					if m.Code != proto.CodeRateLimited || i < 10 {
						t.Fatalf("request %d: %s", i, m)
					}
					limited = m
					break
				}
			}
			e := as[proto.Error](t, limited)
			if e.Code != proto.CodeRateLimited || e.RetryAfterMS <= 0 {
				t.Fatalf("no rate_limited with retry_after_ms: %+v", e)
			}
			// Keeping on at well over 3× the rate: closed with 1008.
			for i := range 40 {
				c.send(proto.TypePage, fmt.Sprintf("f%d", i), map[string]any{"board": "lim"})
			}
			if code := c.closeStatus(5 * time.Second); code != websocket.StatusPolicyViolation {
				t.Fatalf("abuse: close %d, want 1008", code)
			}
		})

		t.Run("server not limited", func(t *testing.T) {
			c := g.dial(in.token(t, "srv", auth.Server))
			if c.welcome.Limits.Rate != 0 {
				t.Fatalf("welcome limits %+v", c.welcome.Limits)
			}
			for range 30 {
				c.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": "lim"})
			}
		})
	})
}

func TestR11Permissions(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) { c.PublicRead = true }})
		g.board("open", func(b *rank.Board) { b.Public = true })
		g.board("closed", nil)
		g.board("serveronly", func(b *rank.Board) { b.ClientWrites = false })

		player := g.dial(in.token(t, "pam", auth.Player))
		scoped := g.dial(in.token(t, "sam", auth.Player, "open"))
		spec := g.dial(in.token(t, "spec", auth.Spectator))
		server := g.dial(in.token(t, "srv", auth.Server))
		admin := g.dial(in.token(t, "root", auth.Admin))
		anon, _, err := g.dialErr("", dialOptions{carrier: "none"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(anon.welcome.Member, "anon-") || anon.welcome.Role != "spectator" {
			t.Fatalf("anonymous welcome %+v", anon.welcome)
		}
		sc := func(board, member string) map[string]any {
			f := map[string]any{"board": board, "delta": 1}
			if member != "" {
				f["member"] = member
			}
			return f
		}
		forb := proto.CodeForbidden
		for _, tc := range []struct {
			name   string
			c      *wsClient
			typ    string
			fields map[string]any
			code   string // "" = allowed
		}{
			{"player own", player, proto.TypeScore, sc("open", ""), ""},
			{"player own named", player, proto.TypeScore, sc("open", "pam"), ""},
			{"player foreign", player, proto.TypeScore, sc("open", "bob"), forb},
			{"player no client writes", player, proto.TypeScore, sc("serveronly", ""), forb},
			{"spectator score", spec, proto.TypeScore, sc("open", ""), forb},
			{"spectator subscribe", spec, proto.TypeSubscribe, map[string]any{"board": "closed", "top": 0}, ""},
			{"server needs member", server, proto.TypeScore, sc("open", ""), proto.CodeBadRequest},
			{"server any member", server, proto.TypeScore, sc("serveronly", "bob"), ""},
			{"admin any member", admin, proto.TypeScore, sc("closed", "bob"), ""},
			{"claim allows", scoped, proto.TypePage, map[string]any{"board": "open"}, ""},
			{"claim page", scoped, proto.TypePage, map[string]any{"board": "closed"}, forb},
			{"claim score", scoped, proto.TypeScore, sc("closed", ""), forb},
			{"claim subscribe", scoped, proto.TypeSubscribe, map[string]any{"board": "closed"}, forb},
			{"claim rank", scoped, proto.TypeRank, map[string]any{"board": "closed", "member": "bob"}, forb},
			{"anon public page", anon, proto.TypePage, map[string]any{"board": "open"}, ""},
			{"anon private page", anon, proto.TypePage, map[string]any{"board": "closed"}, forb},
			{"anon private subscribe", anon, proto.TypeSubscribe, map[string]any{"board": "closed"}, forb},
			{"anon score", anon, proto.TypeScore, sc("open", ""), forb},
			// §6: only server and admin tokens may say when an event happened.
			{"player at", player, proto.TypeScore, withAt(sc("open", "")), forb},
			{"server at", server, proto.TypeScore, withAt(sc("open", "bob")), ""},
			{"admin at", admin, proto.TypeScore, withAt(sc("open", "bob")), ""},
		} {
			m := tc.c.call(tc.typ, tc.fields)
			switch {
			case tc.code == "" && m.Type == proto.TypeError:
				t.Errorf("%s: refused: %s", tc.name, m)
			case tc.code != "" && m.Code != tc.code:
				t.Errorf("%s: %s, want %s", tc.name, m, tc.code)
			}
		}
		// Without PublicRead no token is a 401 (TestR1); with it, an
		// invalid token is still refused.
		if _, resp, err := g.dialErr("garbage", dialOptions{}); err == nil || resp.StatusCode != 401 {
			t.Fatalf("invalid token with PublicRead: %v", err)
		}
	})
}

func TestR12SlowConsumer(t *testing.T) {
	testenv.Long(t)
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) {
			c.ReplyQueue = 16
			c.WriteTimeout = 700 * time.Millisecond
		}})
		g.board("slow", nil)
		srv := g.dial(in.token(t, "srv", auth.Server))
		for i := range 100 {
			srv.score("slow", fmt.Sprintf("member-with-a-long-name-%03d", i), int64(i))
		}
		others := g.dial(in.token(t, "other", auth.Spectator))

		// A client that never reads but keeps asking for big pages.
		slow, _, err := g.dialErr(in.token(t, "slowpoke", auth.Server), dialOptions{rcvBuf: 4096})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		sent := make(chan int, 1)
		go func() {
			n := 0
			defer func() { sent <- n }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				err := slow.ws.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf(`{"type":"page","id":"s%d","board":"slow","limit":100}`, n)))
				cancel()
				if err != nil {
					return
				}
				n++
			}
		}()
		// Everyone else is served meanwhile.
		for range 20 {
			others.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": "slow", "limit": 100})
		}
		testenv.Until(t, 15*time.Second, "the slow consumer to be closed", func() bool {
			return g.metric("wsgateway_slow_consumer_closes_total") >= 1 && g.Hub.Conns() == 2
		})
		close(stop)
		<-sent
		others.expectOK(proto.TypePage, proto.TypePage, map[string]any{"board": "slow"})
	})
}

// TestR12QueueBound checks the reply-queue bound alone: a client that stops
// reading for a while (its writes not yet blocked for WriteTimeout) is closed
// with 1008 "slow consumer" once its replies pass the bound, and the close
// frame follows the replies written before.
func TestR12QueueBound(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) { c.ReplyQueue = 4; c.WriteTimeout = time.Minute }})
	g.board("q", nil)
	srv := g.dial(in.token(t, "srv", auth.Server))
	for i := range 100 {
		srv.score("q", fmt.Sprintf("member-with-a-long-name-%03d", i), int64(i))
	}
	c, _, err := g.dialErr(in.token(t, "reader", auth.Server), dialOptions{rcvBuf: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; g.metric("wsgateway_slow_consumer_closes_total") < 1; i++ {
		if i == 20000 {
			t.Fatal("no slow-consumer close after 20000 unread replies")
		}
		c.send(proto.TypePage, fmt.Sprintf("q%d", i), map[string]any{"board": "q", "limit": 100})
	}
	if code := c.closeStatus(20 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("close %d, want 1008", code)
	}
}

// TestR12QueueBytes: the reply queue is bounded in bytes too. With a count
// bound far away (4096 replies) and a byte bound of 64 KiB, a client asking
// for 100-entry pages (~7 KB each) without reading is closed as a slow
// consumer long before 4096 replies are queued.
func TestR12QueueBytes(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{cfg: func(c *hub.Config) {
		c.ReplyQueue, c.ReplyQueueBytes, c.WriteTimeout = 4096, 64<<10, time.Minute
	}})
	g.board("qb", nil)
	srv := g.dial(in.token(t, "srv", auth.Server))
	for i := range 100 {
		srv.score("qb", fmt.Sprintf("member-with-a-long-name-%03d", i), int64(i))
	}
	c, _, err := g.dialErr(in.token(t, "reader", auth.Server), dialOptions{rcvBuf: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for ; g.metric("wsgateway_slow_consumer_closes_total") < 1; sent++ {
		if sent == 4096 {
			t.Fatal("no slow-consumer close after 4096 unread page replies: the byte bound does not hold")
		}
		c.send(proto.TypePage, fmt.Sprintf("q%d", sent), map[string]any{"board": "qb", "limit": 100})
	}
	if code := c.closeStatus(20 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("close %d, want 1008", code)
	}
	t.Logf("closed after %d page requests", sent)
}

func TestR13StoreUnavailable(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		// Redis keeps its data across the kill (AOF, fsync always).
		in := newInfra(t, kind, "--appendonly", "yes", "--appendfsync", "always")
		var fs *faultStore
		// R13's "promptly" is "well under the write timeout": a long one
		// keeps a loaded machine's slowness from looking like a wait for it.
		const writeTimeout = 20 * time.Second
		g := in.gateway(t, gwOptions{wrap: func(s rank.Store) rank.Store {
			fs = &faultStore{Store: s}
			return fs
		}, cfg: func(c *hub.Config) { c.WriteTimeout = writeTimeout }})
		g.board("down", nil)
		c := g.dial(in.token(t, "srv", auth.Server))
		c.score("down", "a", 1)
		stop, start := fs.down.Store, fs.down.Store
		if kind == redisKind {
			stop = func(bool) { in.redis.Kill() }
			start = func(bool) { in.redis.Start() }
		}
		stop(true)
		for _, tc := range []struct {
			typ    string
			fields map[string]any
		}{
			{proto.TypeScore, map[string]any{"board": "down", "member": "a", "delta": 1}},
			{proto.TypePage, map[string]any{"board": "down"}},
			{proto.TypeRank, map[string]any{"board": "down", "member": "a"}},
		} {
			began := time.Now()
			e := as[proto.Error](t, c.expectError(proto.CodeUnavailable, tc.typ, tc.fields))
			if e.RetryAfterMS <= 0 {
				t.Errorf("%s: no retry_after_ms", tc.typ)
			}
			if d := time.Since(began); d > writeTimeout/2 {
				t.Errorf("%s: unavailable after %s, not well under the write timeout (%s)", tc.typ, d, writeTimeout)
			}
		}
		start(false)
		// Service resumes by itself; the retried id is applied once.
		var ack proto.Ack
		testenv.Until(t, 10*time.Second, "the store to answer again", func() bool {
			m := c.call(proto.TypeScore, map[string]any{"board": "down", "member": "a", "delta": 1})
			if m.Type == proto.TypeAck {
				ack = as[proto.Ack](t, m)
				return true
			}
			return false
		})
		if ack.Score != 2 || ack.Duplicate {
			t.Fatalf("after recovery: %+v", ack)
		}
	})
}

// TestWrappedStoreApplyPath: a store wrapper (the fault tests' faultStore,
// set as node.Config.WrapStore) leaves the one apply path as it is: an
// event scored through it is counted by the wrapper, acknowledged, and
// reaches a subscriber's top frame through the node's sink, which the
// engine under the wrapper tells (the wrapper announces nothing).
func TestWrappedStoreApplyPath(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		var fs *faultStore
		g := in.gateway(t, gwOptions{wrap: func(s rank.Store) rank.Store {
			fs = &faultStore{Store: s}
			return fs
		}})
		g.board("wrapped", nil)
		spec := g.dial(in.token(t, "spec", auth.Spectator))
		spec.expectOK(proto.TypeSubscribed, proto.TypeSubscribe, map[string]any{"board": "wrapped", "top": 3})
		c := g.dial(in.token(t, "srv", auth.Server))
		if a := c.score("wrapped", "m", 7); a.Score != 7 || a.Rank != 1 {
			t.Fatalf("ack %+v", a)
		}
		if n := fs.applies.Load(); n != 1 {
			t.Fatalf("%d applies through the wrapper, want 1", n)
		}
		waitTop(t, spec, g.top("wrapped", 3))
	})
}

func TestR14Drain(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		var fs *faultStore
		g := in.gateway(t, gwOptions{wrap: func(s rank.Store) rank.Store {
			fs = &faultStore{Store: s, applyDelay: 200 * time.Millisecond}
			return fs
		}})
		g.board("drain", nil)
		var clients []*wsClient
		for i := range 4 {
			clients = append(clients, g.dial(in.token(t, fmt.Sprintf("srv%d", i), auth.Server)))
		}
		idle := g.dial(in.token(t, "idle", auth.Spectator))
		const n = 5
		for i, c := range clients {
			for j := range n {
				c.send(proto.TypeScore, fmt.Sprintf("d%d-%d", i, j), map[string]any{"board": "drain", "member": fmt.Sprintf("m%d", i), "delta": 1})
			}
		}
		testenv.Until(t, 5*time.Second, "every connection's first score to be in flight", func() bool {
			return fs.applies.Load() >= int64(len(clients))
		})
		done := g.startShutdown(10 * time.Second)
		acked := 0
		for i, c := range clients {
			got := c.readUntilGoingAway(func(j int, m msg) {
				if m.Type != proto.TypeAck || m.ID != fmt.Sprintf("d%d-%d", i, j) {
					t.Fatalf("client %d: %s, want the ack of d%d-%d", i, m, i, j)
				}
			})
			if got == 0 {
				t.Fatalf("client %d: the request in flight got no reply", i)
			}
			acked += got
		}
		if code := idle.closeStatus(10 * time.Second); code != websocket.StatusGoingAway {
			t.Fatalf("idle client: close %d", code)
		}
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if g.Hub.Conns() != 0 {
			t.Fatalf("%d connections left", g.Hub.Conns())
		}
		// Nothing applied without its ack reaching the client.
		if p := g.top("drain", 10); sumScores(p) != int64(acked) {
			t.Fatalf("board sum %d, acks %d", sumScores(p), acked)
		}
		if err := g.Hub.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
	})
}

func sumScores(p rank.Page) int64 {
	var s int64
	for _, e := range p.Entries {
		s += e.Score
	}
	return s
}

func TestR15BoardAndMemberIDs(t *testing.T) {
	forEachSetup(t, func(t *testing.T, kind string) {
		in := newInfra(t, kind)
		g := in.gateway(t, gwOptions{})
		g.board("known", nil)
		c := g.dial(in.token(t, "srv", auth.Server))
		for _, tc := range []struct {
			typ    string
			fields map[string]any
			code   string
		}{
			{proto.TypeScore, map[string]any{"board": "nope", "member": "a", "delta": 1}, proto.CodeUnknownBoard},
			{proto.TypePage, map[string]any{"board": "nope"}, proto.CodeUnknownBoard},
			{proto.TypeSubscribe, map[string]any{"board": "nope"}, proto.CodeUnknownBoard},
			{proto.TypeRank, map[string]any{"board": "nope", "member": "a"}, proto.CodeUnknownBoard},
			{proto.TypeScore, map[string]any{"board": "no/pe", "member": "a", "delta": 1}, proto.CodeInvalidBoard},
			{proto.TypePage, map[string]any{"board": strings.Repeat("b", 65)}, proto.CodeInvalidBoard},
			{proto.TypeSubscribe, map[string]any{"board": "a b"}, proto.CodeInvalidBoard},
			{proto.TypeScore, map[string]any{"board": "known", "member": "bad member", "delta": 1}, proto.CodeInvalidMember},
			{proto.TypeRank, map[string]any{"board": "known", "member": "x/y"}, proto.CodeInvalidMember},
			{proto.TypeSubscribe, map[string]any{"board": "known", "member": ""}, proto.CodeInvalidMember},
		} {
			c.expectError(tc.code, tc.typ, tc.fields)
		}
	})
	t.Run("dev creates on first use", func(t *testing.T) {
		t.Parallel()
		in := newInfra(t, memoryKind)
		g := in.gateway(t, gwOptions{dev: true})
		c := g.dial(in.token(t, "pam", auth.Player))
		if a := c.score("fresh", "", 3); a.Score != 3 || a.Rank != 1 {
			t.Fatalf("ack %+v", a)
		}
	})
}

// TestHTTPErrorBody checks the refusal body is the REST error shape even for
// a plain GET without upgrade headers.
func TestHTTPErrorBody(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	resp, err := http.Get(g.HTTP + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || resp.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(string(b), `"code":"unauthorized"`) {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

// withAt adds an `at` of now (the store's clock is the real one here).
func withAt(f map[string]any) map[string]any {
	f["at"] = time.Now().UnixMilli()
	return f
}
