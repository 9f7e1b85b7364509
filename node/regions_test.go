package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// TestRegionFramesTwoNodes (§17 with R7, R9): two nodes on one Redis and
// one NATS. Events applied on node a, with the countries node a knows,
// reach node b's region top frames over the bus: labelled with their
// region, ranks within it, a member whose country changed leaving one
// region's frames for another's. A region of a board without regions, or
// one that is no region code, is a bad request. R7's bound itself is
// proved with a fake clock (live.TestRegionFramesFollowStore); here the
// delay is only logged.
func TestRegionFramesTwoNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	a, b := twoNodes(t, 100*time.Millisecond)
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/cup", adm, `{"regions":true}`, 200)
	a.mustREST(t, "PUT", "/api/v1/boards/flat", adm, `{}`, 200)
	for m, country := range map[string]string{"ann": "DE", "bob": "DE", "cid": "FR", "dan": "DE"} {
		a.mustREST(t, "PUT", "/api/v1/members/"+m+"/profile", adm, `{"country":"`+country+`"}`, 200)
	}
	a.mustREST(t, "POST", "/api/v1/boards/cup/scores", adm,
		`[{"id":"1","member":"ann","delta":10},{"id":"2","member":"bob","delta":20},{"id":"3","member":"cid","delta":30}]`, 200)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	subIn := func(region string) *client.Subscription {
		sub, err := dial(t, b, token(t, "watch-"+region, auth.Spectator)).Subscribe(ctx, "cup", client.SubOpts{Top: 3, Region: region})
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	de, fr := subIn("DE"), subIn("FR")
	sent := time.Now() // of the events the frames wait for
	want := func(sub *client.Subscription, region, standings string, total int64) {
		t.Helper()
		var last string
		for {
			select {
			case f := <-sub.Top():
				var got []string
				for _, e := range f.Entries {
					got = append(got, fmt.Sprintf("%d %s %d", e.Rank, e.Member, e.Score))
				}
				last = fmt.Sprintf("region %q total %d: %s", f.Region, f.Total, strings.Join(got, ", "))
				if f.Region != region {
					t.Fatalf("a top frame of the %s subscription: %s", region, last)
				}
				if f.Total == total && strings.Join(got, ", ") == standings {
					t.Logf("%s on node b %v after the events were sent", region, time.Since(sent))
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no %s frame on node b with %s (total %d) within 5s; last %s", region, standings, total, last)
			}
		}
	}
	want(de, "DE", "1 bob 20, 2 ann 10", 2)
	want(fr, "FR", "1 cid 30", 1)

	// dan arrives in DE at the top; ann moves to FR with her next event.
	srv := dial(t, a, token(t, "srv", auth.Server))
	a.mustREST(t, "PUT", "/api/v1/members/ann/profile", adm, `{"country":"FR"}`, 200)
	sent = time.Now()
	for _, e := range []struct {
		member string
		delta  int64
	}{{"dan", 25}, {"ann", 5}} {
		if _, err := srv.Score(ctx, client.ScoreReq{ID: "s-" + e.member, Board: "cup", Member: e.member, Delta: client.Int(e.delta)}); err != nil {
			t.Fatal(err)
		}
	}
	want(de, "DE", "1 dan 25, 2 bob 20", 2)
	want(fr, "FR", "1 cid 30, 2 ann 15", 2)

	// bob's view within his region: second of DE, third of the board.
	view, err := dial(t, b, token(t, "bob", auth.Player)).Subscribe(ctx, "cup", client.SubOpts{Top: -1, Around: 1, Scope: "region"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-view.View():
		if v.Region != "DE" || v.Rank == nil || *v.Rank != 2 || len(v.Around) != 2 || v.Around[0].Member != "dan" || v.Around[1].Rank != 2 {
			t.Fatalf("bob's region view: %+v, want rank 2 in DE under dan", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no view frame of bob's region view")
	}

	w := dial(t, b, token(t, "bad", auth.Spectator))
	for _, o := range []struct {
		board, region string
		scope         string
	}{{"flat", "DE", ""}, {"cup", "XX", ""}, {"cup", "de", ""}, {"flat", "", "region"}, {"cup", "", "planet"}} {
		_, err := w.Subscribe(ctx, o.board, client.SubOpts{Top: 3, Region: o.region, Scope: o.scope, Around: 1, Member: "ann"})
		if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.Code != proto.CodeBadRequest {
			t.Errorf("subscribe to %s in region %q scope %q: %v, want bad_request", o.board, o.region, o.scope, err)
		}
	}
}

// TestHeldRegionFramesTwoNodes (§16 and §17, R35): on a region board a
// member held by a jump on node a leaves node b's frames of its region
// from the frame of its holding event on, and a region view's ranks close
// up over it; after the queue's clear (on node a) both show it again.
func TestHeldRegionFramesTwoNodes(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	a, b := twoNodes(t, 100*time.Millisecond)
	adm := token(t, "root", auth.Admin)
	a.mustREST(t, "PUT", "/api/v1/boards/hcup", adm, `{"regions":true,"flags":{"jump":50}}`, 200)
	for _, m := range []string{"ann", "bob", "cheat"} {
		a.mustREST(t, "PUT", "/api/v1/members/"+m+"/profile", adm, `{"country":"DE"}`, 200)
	}
	a.mustREST(t, "POST", "/api/v1/boards/hcup/scores", adm, `[{"id":"1","member":"ann","delta":10},{"id":"2","member":"bob","delta":20}]`, 200)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	de, err := dial(t, b, token(t, "watcher", auth.Spectator)).Subscribe(ctx, "hcup", client.SubOpts{Top: 5, Region: "DE"})
	if err != nil {
		t.Fatal(err)
	}
	view, err := dial(t, b, token(t, "ann", auth.Player)).Subscribe(ctx, "hcup", client.SubOpts{Top: -1, Around: 2, Scope: "region"})
	if err != nil {
		t.Fatal(err)
	}
	var heldSeq int64 // from the holding event on, no frame shows cheat
	standings := func(es []proto.Entry) string {
		var out []string
		for _, e := range es {
			out = append(out, fmt.Sprintf("%d %s %d", e.Rank, e.Member, e.Score))
		}
		return strings.Join(out, ", ")
	}
	wantTop := func(want string) {
		t.Helper()
		last := ""
		for {
			select {
			case f := <-de.Top():
				last = standings(f.Entries)
				if heldSeq > 0 && f.Seq >= heldSeq && strings.Contains(last, "cheat") {
					t.Fatalf("a DE frame from the holding event on (seq %d ≥ %d) shows the held member: %s", f.Seq, heldSeq, last)
				}
				if last == want {
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no DE frame on node b with %s within 5s; last %s", want, last)
			}
		}
	}
	wantView := func(rank int64, want string) {
		t.Helper()
		last := ""
		for {
			select {
			case v := <-view.View():
				last = fmt.Sprintf("rank %v: %s", v.Rank, standings(v.Around))
				if heldSeq > 0 && v.Seq >= heldSeq && strings.Contains(last, "cheat") {
					t.Fatalf("ann's region view from the holding event on shows the held member: %s", last)
				}
				if v.Rank != nil && *v.Rank == rank && standings(v.Around) == want {
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no region view of ann on node b at rank %d with %s within 5s; last %s", rank, want, last)
			}
		}
	}
	wantTop("1 bob 20, 2 ann 10")
	wantView(2, "1 bob 20, 2 ann 10")

	srv := dial(t, a, token(t, "srv", auth.Server))
	ack, err := srv.Score(ctx, client.ScoreReq{ID: "c1", Board: "hcup", Member: "cheat", Delta: client.Int(100)})
	if err != nil || !ack.Held || ack.Region != "DE" || ack.RegionRank != 1 {
		t.Fatalf("cheat's jump: %+v, %v; want held, first in DE", ack, err)
	}
	heldSeq = ack.Seq
	// The standings did not change: ann's next event brings the next frames.
	if _, err := srv.Score(ctx, client.ScoreReq{ID: "a2", Board: "hcup", Member: "ann", Delta: client.Int(1)}); err != nil {
		t.Fatal(err)
	}
	wantTop("1 bob 20, 2 ann 11")
	wantView(2, "1 bob 20, 2 ann 11")

	a.mustREST(t, "POST", "/api/v1/boards/hcup/held/cheat", adm, `{"action":"clear"}`, 200)
	heldSeq = 0
	wantTop("1 cheat 100, 2 bob 20, 3 ann 11")
	wantView(3, "1 cheat 100, 2 bob 20, 3 ann 11")
}
