package node_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestBanReachesOtherNode (R21): with two nodes on one Redis and one NATS,
// a ban, a lift, a global ban and a removal made through node a change
// node b's top frames: the member leaves, the others' ranks close up, and a
// lift brings it back with its score. R21's "within one interval + 50 ms"
// is proved with a fake clock where node b's part starts
// (live.TestR20R21BoundAfterNotice); over real sockets on a loaded machine
// the delay is only logged.
func TestBanReachesOtherNode(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	const interval = 100 * time.Millisecond
	a, b := twoNodes(t, interval)
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/cup", adm, `{}`, 200)
	a.mustREST(t, "POST", "/api/v1/boards/cup/scores", adm,
		`[{"id":"1","member":"ann","delta":3},{"id":"2","member":"cheat","delta":9},{"id":"3","member":"bob","delta":2}]`, 200)
	sub := subscribe(t, b, "cup", 10)
	nextTop(t, sub, 5*time.Second, "cheat on b", "cheat", func(e proto.Entry) bool { return e.Rank == 1 && e.Score == 9 })

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
	shape := func(f proto.Top) string {
		var s strings.Builder
		for _, e := range f.Entries {
			fmt.Fprintf(&s, "%d:%s=%d ", e.Rank, e.Member, e.Score)
		}
		fmt.Fprintf(&s, "total=%d", f.Total)
		return s.String()
	}
	steps := []struct {
		what, method, path, body string
		status                   int
		want                     string
	}{
		{"ban", "PUT", "/api/v1/boards/cup/bans/cheat", `{"reason":"aimbot"}`, 200, "1:ann=3 2:bob=2 total=2"},
		{"lift", "DELETE", "/api/v1/boards/cup/bans/cheat", "", 204, "1:cheat=9 2:ann=3 3:bob=2 total=3"},
		{"global ban", "PUT", "/api/v1/bans/cheat", `{}`, 200, "1:ann=3 2:bob=2 total=2"},
		{"global lift", "DELETE", "/api/v1/bans/cheat", "", 204, "1:cheat=9 2:ann=3 3:bob=2 total=3"},
		{"removal", "DELETE", "/api/v1/boards/cup/members/ann", "", 204, "1:cheat=9 2:bob=2 total=2"},
	}
	for _, st := range steps {
		mu.Lock()
		got = got[:0]
		mu.Unlock()
		began := time.Now()
		a.mustREST(t, st.method, st.path, adm, st.body, st.status)
		var at time.Time
		testenv.Until(t, 5*time.Second, st.what+" on node b's top frame", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, s := range got {
				if shape(s.f) == st.want {
					at = s.at
					return true
				}
			}
			return false
		})
		t.Logf("%s on node b after %s (R21's bound is %s)", st.what, at.Sub(began).Round(time.Millisecond), interval+50*time.Millisecond)
	}
	// A banned member's score through node b is refused with banned.
	a.mustREST(t, "PUT", "/api/v1/boards/cup/bans/bob", adm, `{}`, 200)
	body := b.mustREST(t, "POST", "/api/v1/boards/cup/scores", adm, `[{"id":"9","member":"bob","delta":1}]`, 200)
	if !strings.Contains(body, `"banned"`) {
		t.Fatalf("bob's score on node b while banned: %s", body)
	}
}
