package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

func TestGatewayScoresReadsAndFrames(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t)
	ctx := testCtx(t)
	admin, err := client.Dial(ctx, g.URL, mint("admin", auth.Admin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	watcher, err := client.Dial(ctx, g.URL, mint("carol", auth.Spectator), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	if w := watcher.Welcome(); w.Member != "carol" || w.Role != "spectator" {
		t.Errorf("welcome %+v", w)
	}
	sub, err := watcher.Subscribe(ctx, "arena", client.SubOpts{Top: 3, Around: 1})
	if err != nil {
		t.Fatal(err)
	}

	for i, ev := range []struct {
		member    string
		delta     int64
		wantScore int64
		wantRank  int64
	}{
		{"alice", 10, 10, 1},
		{"bob", 20, 20, 1},
		{"carol", 15, 15, 2},
		{"alice", 30, 40, 1},
	} {
		ack, err := admin.Score(ctx, client.ScoreReq{Board: "arena", Member: ev.member, Delta: client.Int(ev.delta)})
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ack.Score != ev.wantScore || ack.Rank != ev.wantRank || ack.Member != ev.member || ack.Duplicate {
			t.Errorf("event %d: ack %+v; want score %d rank %d", i, ack, ev.wantScore, ev.wantRank)
		}
	}
	// A repeat of an id is answered with the first result (R4).
	first, err := admin.Score(ctx, client.ScoreReq{Board: "arena", Member: "dave", Delta: client.Int(1), ID: "dave-1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := admin.Score(ctx, client.ScoreReq{Board: "arena", Member: "dave", Delta: client.Int(1), ID: "dave-1"})
	if err != nil || !again.Duplicate || again.Score != first.Score || again.Seq != first.Seq {
		t.Errorf("repeat: %+v, %v; want a duplicate of %+v", again, err, first)
	}
	_, err = admin.Score(ctx, client.ScoreReq{Board: "arena", Member: "dave", Delta: client.Int(2), ID: "dave-1"})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != proto.CodeIdempotencyConflict {
		t.Errorf("conflicting repeat: %v; want idempotency_conflict", err)
	}

	page, err := admin.Page(ctx, client.PageReq{Board: "arena", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range page.Entries {
		got = append(got, fmt.Sprintf("%d:%s:%d", en.Rank, en.Member, en.Score))
	}
	if want := []string{"1:alice:40", "2:bob:20", "3:carol:15", "4:dave:1"}; !slices.Equal(got, want) || page.Total != 4 {
		t.Errorf("page %v total %d; want %v total 4", got, page.Total, want)
	}
	rk, err := watcher.Rank(ctx, client.RankReq{Board: "arena", Around: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rk.Member != "carol" || rk.Rank == nil || *rk.Rank != 3 || *rk.Score != 15 || len(rk.Around) != 3 {
		t.Errorf("rank %+v", rk)
	}
	nobody, err := watcher.Rank(ctx, client.RankReq{Board: "arena", Member: "zed"})
	if err != nil || nobody.Rank != nil || nobody.Score != nil {
		t.Errorf("absent member: %+v, %v", nobody, err)
	}
	_, err = watcher.Score(ctx, client.ScoreReq{Board: "arena", Delta: client.Int(1)})
	if !errors.As(err, &e) || e.Code != proto.CodeForbidden {
		t.Errorf("spectator score: %v; want forbidden", err)
	}

	// The board frame (R19) came after subscribed: an open board.
	select {
	case b := <-sub.State():
		if b.Board != "arena" || b.State != "open" || b.EndsAt != nil || b.TS == 0 {
			t.Errorf("board frame %+v", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no board frame")
	}

	// Frames converge on the final state (R7, R8).
	testenv.Until(t, 10*time.Second, "a top frame with the final top 3", func() bool {
		select {
		case top := <-sub.Top():
			return len(top.Entries) == 3 && top.Entries[0].Score == 40 && top.Entries[2].Member == "carol" && top.Total == 4
		default:
			return false
		}
	})
	testenv.Until(t, 10*time.Second, "a view frame of carol at rank 3", func() bool {
		select {
		case v := <-sub.View():
			return v.Member == "carol" && v.Rank != nil && *v.Rank == 3 && len(v.Around) == 3 && v.Around[2].Member == "dave"
		default:
			return false
		}
	})
	if err := watcher.Unsubscribe(ctx, "arena"); err != nil {
		t.Fatal(err)
	}
}

// Events reach the gateway and are applied, but their acks are lost with
// the connection: the client re-sends the same ids, the gateway answers
// duplicate, and nothing is counted twice (R4).
func TestGatewayLostAcksAreResentWithTheSameID(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t)
	p := startProxy(t, g.URL[len("ws://"):len(g.URL)-len("/ws")])
	ctx := testCtx(t)
	c, err := client.Dial(ctx, "ws://"+p.Addr+"/ws", mint("bot", auth.Server), &client.Options{
		Reconnect: true, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	p.muted.Store(true)
	const n = 20
	acks := make(chan proto.Ack, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ack, err := c.Score(ctx, client.ScoreReq{Board: "lost", Member: "m" + strconv.Itoa(i%4), Delta: client.Int(int64(i + 1))})
			if err != nil {
				t.Error(err)
				return
			}
			acks <- ack
		})
	}
	const sum = n * (n + 1) / 2
	testenv.Until(t, 10*time.Second, "every event applied", func() bool {
		pg, err := g.Store.Top(ctx, "lost", rank.PeriodSel(""), 0, 10)
		if err != nil {
			return false
		}
		var s int64
		for _, e := range pg.Entries {
			s += e.Score
		}
		return s == sum
	})
	p.muted.Store(false)
	p.cut()
	wg.Wait()
	close(acks)
	dups := 0
	for a := range acks {
		if a.Duplicate {
			dups++
		}
	}
	if dups != n {
		t.Errorf("%d of %d re-sent events answered duplicate; want all", dups, n)
	}
	pg, err := c.Page(ctx, client.PageReq{Board: "lost", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range pg.Entries {
		total += e.Score
	}
	if total != sum || pg.Total != 4 {
		t.Errorf("board sums to %d over %d members; want %d over 4", total, pg.Total, sum)
	}
}

// The gateway process is killed mid-stream and started again on the same
// port (Redis keeps the board): every event acknowledged is counted exactly
// once.
func TestGatewayKilledAndRestarted(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	redis := testenv.StartRedis(t)
	gw := startBinary(t, redis.URL())
	ctx := testCtx(t)
	c, err := client.Dial(ctx, gw.url(), mint("bot", auth.Server), &client.Options{
		Reconnect: true, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const workers, perWorker = 4, 150
	var acked, dups atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range perWorker {
				ack, err := c.Score(ctx, client.ScoreReq{Board: "killed", Member: "w" + strconv.Itoa(w), Delta: client.Int(1)})
				if err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
				if ack.Duplicate {
					dups.Add(1)
				}
			}
		})
	}
	testenv.Until(t, 10*time.Second, "some acks before the kill", func() bool { return acked.Load() >= workers*perWorker/4 })
	gw.kill()
	gw.start()
	wg.Wait()
	t.Logf("%d acks, %d of them duplicates of events applied before the kill", acked.Load(), dups.Load())
	for w := range workers {
		r, err := c.Rank(ctx, client.RankReq{Board: "killed", Member: "w" + strconv.Itoa(w)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Score == nil || *r.Score != perWorker {
			t.Errorf("w%d: score %v; want %d (one per acknowledged event)", w, r.Score, perWorker)
		}
	}
}

// binaryGateway is cmd/wsgateway run as a process.
type binaryGateway struct {
	t    *testing.T
	bin  string
	addr string
	args []string
	cmd  *exec.Cmd
	log  *os.File
}

func startBinary(t *testing.T, redisURL string) *binaryGateway {
	t.Helper()
	dir := t.TempDir()
	bin, err := testenv.BuildGateway(dir)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	g := &binaryGateway{t: t, bin: bin, log: log, addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))}
	g.args = []string{"--dev", "--addr", g.addr, "--redis-url", redisURL, "--jwt-secret", testSecret,
		"--log-level", "warn", "--top-interval", "20ms"}
	t.Cleanup(func() {
		g.kill()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("gateway log:\n%s", b)
		}
	})
	g.start()
	return g
}

func (g *binaryGateway) url() string { return "ws://" + g.addr + "/ws" }

func (g *binaryGateway) start() {
	g.t.Helper()
	g.cmd = exec.Command(g.bin, g.args...)
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	if err := g.cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	testenv.Until(g.t, 10*time.Second, "the gateway ready", func() bool {
		resp, err := http.Get("http://" + g.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func (g *binaryGateway) kill() {
	if g.cmd != nil {
		g.cmd.Process.Kill()
		g.cmd.Wait()
		g.cmd = nil
	}
}

// TestScoreOnShardedBoard: a sharded board's ack carries no rank (R24 v1.3,
// ack_rank none): the client's Ack has Rank 0 and no PrevRank, and the
// member's rank comes from a rank request; with ack_rank global it is in
// the ack again.
func TestScoreOnShardedBoard(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	ctx := testCtx(t)
	b := rank.DefaultBoard("wide")
	b.Shards = 4
	if _, err := g.Store.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, g.URL, mint("bot", auth.Server), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, m := range []string{"ann", "bob", "ann"} {
		ack, err := c.Score(ctx, client.ScoreReq{Board: "wide", Member: m, Delta: client.Int(int64(10 * (i + 1)))})
		if err != nil {
			t.Fatal(err)
		}
		if ack.Rank != 0 || ack.PrevRank != nil || ack.Seq != int64(i+1) {
			t.Fatalf("ack %d: %+v, want no rank and seq %d", i, ack, i+1)
		}
	}
	if r, err := c.Rank(ctx, client.RankReq{Board: "wide", Member: "ann"}); err != nil || r.Rank == nil || *r.Rank != 1 || *r.Score != 40 {
		t.Fatalf("rank of ann: %+v, %v; want 1 at 40", r, err)
	}
	b.AckRank = rank.AckRankGlobal
	if _, err := g.Store.PutBoard(ctx, b); err != nil {
		t.Fatal(err)
	}
	ack, err := c.Score(ctx, client.ScoreReq{Board: "wide", Member: "bob", Delta: client.Int(25)})
	if err != nil || ack.Rank != 1 || ack.PrevRank == nil || *ack.PrevRank != 2 {
		t.Fatalf("ack with ack_rank global: %+v, %v; want rank 1 from 2", ack, err)
	}
}
