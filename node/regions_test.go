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
