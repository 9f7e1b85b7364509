package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

func namedToken(t *testing.T, sub string, role auth.Role, name string) string {
	t.Helper()
	tok, err := auth.MintHS256(secret, auth.Claims{Sub: sub, Role: role, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func dial(t *testing.T, r *running, tok string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, r.ws, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (r *running) mustREST(t testing.TB, method, path, tok, body string, status int) string {
	t.Helper()
	st, got := r.rest(t, method, path, tok, body)
	if st != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, st, got, status)
	}
	return got
}

// entryOf finds member in es.
func entryOf(es []proto.Entry, member string) (proto.Entry, bool) {
	for _, e := range es {
		if e.Member == member {
			return e, true
		}
	}
	return proto.Entry{}, false
}

// nextTop waits for a top frame on sub whose entry for member satisfies ok.
func nextTop(t *testing.T, sub *client.Subscription, within time.Duration, what, member string, ok func(proto.Entry) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case f := <-sub.Top():
			if e, found := entryOf(f.Entries, member); found && ok(e) {
				return
			}
		case <-deadline:
			t.Fatalf("no top frame with %s within %s", what, within)
		}
	}
}

func nextView(t *testing.T, sub *client.Subscription, what, member string, ok func(proto.Entry) bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case f := <-sub.View():
			if e, found := entryOf(f.Around, member); found && ok(e) {
				return
			}
		case <-deadline:
			t.Fatalf("no view frame with %s within 5s", what)
		}
	}
}

// TestProfilesEverywhere is R20 on one node: top and view frames, page and
// rank replies and REST reads carry the profile's name, avatar and
// country; a rename reaches the frames; a deleted profile gives the name of
// the last token that scored back.
func TestProfilesEverywhere(t *testing.T) {
	t.Parallel()
	r := start(t, node.Config{})
	adm := token(t, "root", auth.Admin)
	r.mustREST(t, "PUT", "/api/v1/boards/deco", adm, `{}`, 200)
	ann := dial(t, r, namedToken(t, "ann", auth.Player, "Ann Token"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ann.Score(ctx, client.ScoreReq{ID: "a1", Board: "deco", Delta: client.Int(10)}); err != nil {
		t.Fatal(err)
	}
	r.mustREST(t, "POST", "/api/v1/boards/deco/scores", adm, `[{"id":"b1","member":"bob","delta":5}]`, 200)
	r.mustREST(t, "PUT", "/api/v1/members/ann/profile", token(t, "game", auth.Server),
		`{"name":"Ann","avatar":"https://img.example/ann.png","country":"FR"}`, 200)

	full := func(e proto.Entry) bool {
		return e.Name == "Ann" && e.Avatar == "https://img.example/ann.png" && e.Country == "FR"
	}
	watcher := dial(t, r, token(t, "watcher", auth.Spectator))
	sub, err := watcher.Subscribe(ctx, "deco", client.SubOpts{Top: 10, Around: 1, Member: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	nextTop(t, sub, 5*time.Second, "ann's profile", "ann", full)
	nextView(t, sub, "ann's profile in bob's view", "ann", full)

	pg, err := watcher.Page(ctx, client.PageReq{Board: "deco", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := entryOf(pg.Entries, "ann"); !full(e) {
		t.Fatalf("page: %+v", pg.Entries)
	}
	if e, _ := entryOf(pg.Entries, "bob"); e.Name != "" || e.Avatar != "" || e.Country != "" {
		t.Fatalf("page: bob has no profile and no token name: %+v", e)
	}
	rk, err := watcher.Rank(ctx, client.RankReq{Board: "deco", Member: "bob", Around: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := entryOf(rk.Around, "ann"); !full(e) {
		t.Fatalf("rank: %+v", rk.Around)
	}
	want := `{"rank":1,"member":"ann","score":10,"name":"Ann","avatar":"https://img.example/ann.png","country":"FR"}`
	if body := r.mustREST(t, "GET", "/api/v1/boards/deco/top", adm, "", 200); !strings.Contains(body, want) {
		t.Fatalf("REST top: %s", body)
	}
	if body := r.mustREST(t, "GET", "/api/v1/boards/deco/members/bob?around=1", adm, "", 200); !strings.Contains(body, want) {
		t.Fatalf("REST member: %s", body)
	}

	// A rename is a change under R7/R8: both frames follow.
	r.mustREST(t, "PUT", "/api/v1/members/ann/profile", adm, `{"name":"Annie","country":"SE"}`, 200)
	renamed := func(e proto.Entry) bool { return e.Name == "Annie" && e.Avatar == "" && e.Country == "SE" }
	nextTop(t, sub, 5*time.Second, "the rename", "ann", renamed)
	nextView(t, sub, "the rename in bob's view", "ann", renamed)

	// Deleted: the name of the last token that scored is back.
	r.mustREST(t, "DELETE", "/api/v1/members/ann/profile", adm, "", 204)
	back := func(e proto.Entry) bool { return e.Name == "Ann Token" && e.Avatar == "" && e.Country == "" }
	nextTop(t, sub, 5*time.Second, "the token name", "ann", back)
	nextView(t, sub, "the token name in bob's view", "ann", back)
}

// TestRenameReachesOtherNode: two nodes on one Redis and one NATS. Node b
// shows a profile (cached); a rename through node a reaches node b's top
// frame (R20: a change under R7, R9). R20's "within one interval + 50 ms"
// is proved with a fake clock where node b's part starts
// (live.TestR20R21BoundAfterNotice); over real sockets on a loaded machine
// the delay is only logged.
func TestRenameReachesOtherNode(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	const interval = 100 * time.Millisecond
	a, b := twoNodes(t, interval)
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/cup", adm, `{}`, 200)
	a.mustREST(t, "POST", "/api/v1/boards/cup/scores", adm,
		`[{"id":"1","member":"ann","delta":3},{"id":"2","member":"bob","delta":2}]`, 200)
	a.mustREST(t, "PUT", "/api/v1/members/ann/profile", adm, `{"name":"Old Name"}`, 200)
	sub := subscribe(t, b, "cup", 10)
	nextTop(t, sub, 5*time.Second, "the old name on b", "ann", func(e proto.Entry) bool { return e.Name == "Old Name" })

	// Frames are stamped as they arrive, so the bound is checked on the
	// arrival time, not on when a poll happened to look.
	type stamped struct {
		at time.Time
		f  proto.Top
	}
	var mu sync.Mutex
	var got []stamped
	go func() {
		for f := range sub.Top() {
			mu.Lock()
			got = append(got, stamped{time.Now(), f})
			mu.Unlock()
		}
	}()
	for i := range 3 {
		name := fmt.Sprintf("New Name %d", i)
		began := time.Now()
		a.mustREST(t, "PUT", "/api/v1/members/ann/profile", adm, `{"name":"`+name+`","country":"NO"}`, 200)
		var at time.Time
		testenv.Until(t, 5*time.Second, "the rename on node b's top frame", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, s := range got {
				if e, ok := entryOf(s.f.Entries, "ann"); ok && e.Name == name && e.Country == "NO" {
					at = s.at
					return true
				}
			}
			return false
		})
		t.Logf("rename %d on node b after %s (R20's bound is %s)", i, at.Sub(began).Round(time.Millisecond), interval+50*time.Millisecond)
	}
}

// counter counts a node's Top reads and profile reads.
type counter struct {
	tops, profiles atomic.Int64
}

type countTop struct {
	rank.Store
	c *counter
}

func (s countTop) Top(ctx context.Context, b string, p rank.PeriodSel, off, lim int) (rank.Page, error) {
	s.c.tops.Add(1)
	return s.Store.Top(ctx, b, p, off, lim)
}

type countProfiles struct {
	inner rank.Profiles
	c     *counter
}

func (s countProfiles) PutProfile(ctx context.Context, m string, p rank.Profile) error {
	return s.inner.PutProfile(ctx, m, p)
}

func (s countProfiles) GetProfile(ctx context.Context, m string) (rank.Profile, error) {
	return s.inner.GetProfile(ctx, m)
}

func (s countProfiles) DeleteProfile(ctx context.Context, m string) error {
	return s.inner.DeleteProfile(ctx, m)
}

func (s countProfiles) Profiles(ctx context.Context, members []string) (map[string]rank.Profile, error) {
	s.c.profiles.Add(1)
	return s.inner.Profiles(ctx, members)
}

// TestFramesCostNoProfileReads: on Redis, a top frame of 100 entries that
// all have profiles costs its top read and nothing else once the node's
// cache is warm: twenty frames later the profile reads have not moved.
func TestFramesCostNoProfileReads(t *testing.T) {
	t.Parallel()
	rd := testenv.StartRedis(t)
	rc, err := redisstore.NewClient(rd.URL())
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	r := start(t, node.Config{
		Redis:        rc,
		WrapStore:    func(s rank.Store) rank.Store { return countTop{s, &c} },
		WrapProfiles: func(p rank.Profiles) rank.Profiles { return countProfiles{p, &c} },
	})
	adm := token(t, "root", auth.Admin)
	r.mustREST(t, "PUT", "/api/v1/boards/big", adm, `{"top":100}`, 200)
	var evs []string
	for i := range 100 {
		m := fmt.Sprintf("p%03d", i)
		r.mustREST(t, "PUT", "/api/v1/members/"+m+"/profile", adm,
			fmt.Sprintf(`{"name":"Player %d","avatar":"https://img.example/%d.png","country":"DE"}`, i, i), 200)
		evs = append(evs, fmt.Sprintf(`{"id":"s%d","member":"%s","delta":%d}`, i, m, 1000+i))
	}
	r.mustREST(t, "POST", "/api/v1/boards/big/scores", adm, "["+strings.Join(evs, ",")+"]", 200)

	sub := subscribe(t, r, "big", 100)
	allDecorated := func(f proto.Top) bool {
		if len(f.Entries) != 100 {
			return false
		}
		for _, e := range f.Entries {
			if !strings.HasPrefix(e.Name, "Player ") || e.Country != "DE" || e.Avatar == "" {
				return false
			}
		}
		return true
	}
	waitFrame := func(what string, ok func(proto.Top) bool) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case f := <-sub.Top():
				if ok(f) {
					if !allDecorated(f) {
						t.Fatalf("%s: a frame with undecorated entries: %+v", what, f.Entries)
					}
					return
				}
			case <-deadline:
				t.Fatalf("no frame with %s within 5s", what)
			}
		}
	}
	waitFrame("100 decorated entries", allDecorated)
	profiles0, tops0 := c.profiles.Load(), c.tops.Load()
	for i := range 20 {
		// p000 gains one point: every event changes the top 100.
		want := int64(1000 + i + 1)
		r.mustREST(t, "POST", "/api/v1/boards/big/scores", adm,
			fmt.Sprintf(`[{"id":"up%d","member":"p000","delta":%d}]`, i, want-1000-int64(i)), 200)
		waitFrame(fmt.Sprintf("p000 at %d", want), func(f proto.Top) bool {
			e, ok := entryOf(f.Entries, "p000")
			return ok && e.Score == want
		})
	}
	tops := c.tops.Load() - tops0
	if n := c.profiles.Load() - profiles0; n != 0 {
		t.Fatalf("20 frames of 100 decorated entries made %d profile reads (and %d top reads), want 0", n, tops)
	}
	if tops < 20 {
		t.Fatalf("%d top reads for 20 frames: the frames did not come from reads", tops)
	}
	t.Logf("20 frames of 100 decorated entries: %d top reads, 0 profile reads", tops)
}
