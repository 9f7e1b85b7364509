// Command listprobe is the members-subscription amplification probe of
// bench/lists.sh (docs/performance.md, "Member lists under abuse"): it
// makes --boards boards of --members members each, keeps every board
// changing (--rate events/s in all), and measures another client's ack
// latency (--victim-rate events/s on the first board) and the Redis CPU
// spent, first with nothing else, then while one player holds --conns
// connections (of --owners members) each subscribed on every board to
// --ids distinct ids.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
	"github.com/wsgateway/wsgateway/proto"
)

type phase struct {
	Name       string  `json:"name"`
	Acks       int     `json:"acks"`
	AckP50Ms   float64 `json:"ack_p50_ms"`
	AckP99Ms   float64 `json:"ack_p99_ms"`
	RedisCPU   float64 `json:"redis_cpu"`    // share of one core
	GatewayCPU float64 `json:"gateway_cpu"`  // share of one core (--gateway-pid)
	Scripts    uint64  `json:"script_calls"` // every script call (apply and reads)
	ScriptUsec uint64  `json:"script_usec"`  // Redis time in them
	Refused    int     `json:"refused"`      // attacker subscriptions refused
	Subscribed int     `json:"subscribed"`   // attacker subscriptions held
	Members    uint64  `json:"members_frames"`
}

func main() {
	wsURL := flag.String("url", "ws://127.0.0.1:8080/ws", "gateway WebSocket URL")
	secret := flag.String("secret", "", "the gateway's HS256 key")
	raddr := flag.String("redis", "127.0.0.1:6379", "the gateway's Redis (INFO only)")
	nb := flag.Int("boards", 8, "boards")
	nm := flag.Int("members", 10000, "members per board")
	rate := flag.Int("rate", 400, "background score events per second, over every board")
	vrate := flag.Int("victim-rate", 100, "the measured client's score events per second (first board)")
	conns := flag.Int("conns", 16, "the attacker's connections")
	owners := flag.Int("owners", 1, "distinct members (token subs) the attacker's connections spread over")
	ids := flag.Int("ids", 100, "distinct ids per members subscription")
	dur := flag.Duration("duration", 10*time.Second, "each phase")
	out := flag.String("json", "", "write the phases here")
	gwPID := flag.Int("gateway-pid", 0, "the gateway's pid, for its CPU (0: not measured)")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	mint := func(sub string, role auth.Role) string {
		t, err := auth.MintHS256([]byte(*secret), auth.Claims{Sub: sub, Role: role, TTL: time.Hour})
		if err != nil {
			log.Fatal(err)
		}
		return t
	}
	boards := make([]string, *nb)
	for i := range boards {
		boards[i] = "lists" + strconv.Itoa(i)
		create(*wsURL, mint("probe-admin", auth.Admin), boards[i])
	}
	srv := dial(ctx, *wsURL, mint("probe-game", auth.Server), nil)
	seed(ctx, srv, boards, *nm)
	log.Printf("seeded %d boards of %d members", *nb, *nm)

	rdb := redis.NewClient(&redis.Options{Addr: *raddr})
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { steady(ctx, srv, boards, *nm, *rate, stop, nil) })
	victim := dial(ctx, *wsURL, mint("probe-victim", auth.Server), nil)
	var phases []phase
	measure := func(name string, p phase) {
		var lat []time.Duration
		var mu sync.Mutex
		before, gw0 := redisStats(ctx, rdb), cpuSeconds(*gwPID)
		vstop := make(chan struct{})
		var vw sync.WaitGroup
		vw.Go(func() {
			steady(ctx, victim, boards[:1], *nm, *vrate, vstop, func(d time.Duration) {
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			})
		})
		t0 := time.Now()
		time.Sleep(*dur)
		close(vstop)
		vw.Wait()
		after, gw1 := redisStats(ctx, rdb), cpuSeconds(*gwPID)
		el := time.Since(t0).Seconds()
		p.GatewayCPU = (gw1 - gw0) / el
		slices.Sort(lat)
		p.Name, p.Acks = name, len(lat)
		p.AckP50Ms, p.AckP99Ms = ms(pct(lat, 0.50)), ms(pct(lat, 0.99))
		p.RedisCPU = (after.cpu - before.cpu) / el
		p.Scripts, p.ScriptUsec = after.calls-before.calls, after.evalUsec-before.evalUsec
		phases = append(phases, p)
		log.Printf("%-8s acks %d p50 %.2f ms p99 %.2f ms; redis cpu %.1f%%, gateway cpu %.1f%%; script calls %d, %d us; attacker subscriptions %d held, %d refused",
			name, p.Acks, p.AckP50Ms, p.AckP99Ms, 100*p.RedisCPU, 100*p.GatewayCPU, p.Scripts, p.ScriptUsec, p.Subscribed, p.Refused)
	}
	measure("baseline", phase{})

	var frames atomic.Uint64
	var att []*client.Client
	held, refused := 0, 0
	var refusal string
	for c := range *conns {
		tok := mint("probe-attacker-"+strconv.Itoa(c%max(*owners, 1)), auth.Player)
		cl := dial(ctx, *wsURL, tok, func(proto.Members) { frames.Add(1) })
		att = append(att, cl)
		for _, b := range boards {
			list := make([]string, *ids)
			for k := range list {
				list[k] = member((c**ids + k) % *nm)
			}
			if _, err := cl.Subscribe(ctx, b, client.SubOpts{Members: list}); err != nil {
				refused++
				refusal = err.Error()
				continue
			}
			held++
		}
	}
	if refusal != "" {
		log.Printf("a refusal: %s", refusal)
	}
	measure("attack", phase{Refused: refused, Subscribed: held})
	phases[len(phases)-1].Members = frames.Load()
	for _, cl := range att {
		cl.Close()
	}
	close(stop)
	bg.Wait()
	if *out != "" {
		b, _ := json.MarshalIndent(phases, "", "  ")
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func member(i int) string { return fmt.Sprintf("m%05d", i) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func create(wsURL, admin, board string) {
	base := strings.Replace(strings.TrimSuffix(wsURL, "/ws"), "ws", "http", 1)
	body, _ := json.Marshal(map[string]any{"id": board})
	req, _ := http.NewRequest(http.MethodPut, base+"/api/v1/boards/"+board, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		log.Fatalf("create %s: %s", board, resp.Status)
	}
}

func dial(ctx context.Context, url, tok string, onMembers func(proto.Members)) *client.Client {
	c, err := client.Dial(ctx, url, tok, &client.Options{OnMembers: onMembers})
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// seed gives every member of every board a score, 64 events in flight.
func seed(ctx context.Context, c *client.Client, boards []string, n int) {
	work := make(chan [2]int)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for w := range work {
				_, err := c.Score(ctx, client.ScoreReq{Board: boards[w[0]], Member: member(w[1]), Delta: client.Int(int64(1 + w[1]%997))})
				if err != nil {
					log.Fatal(err)
				}
			}
		})
	}
	for b := range boards {
		for m := range n {
			work <- [2]int{b, m}
		}
	}
	close(work)
	wg.Wait()
}

// steady sends rate events per second spread over boards until stop, each
// ack's latency to lat (nil: none kept).
func steady(ctx context.Context, c *client.Client, boards []string, n, rate int, stop <-chan struct{}, lat func(time.Duration)) {
	tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		wg.Go(func() {
			t := time.Now()
			_, err := c.Score(ctx, client.ScoreReq{Board: boards[i%len(boards)], Member: member(rand.IntN(n)), Delta: client.Int(int64(1 + rand.IntN(50)))})
			if err != nil {
				log.Printf("score: %v", err)
				return
			}
			if lat != nil {
				lat(time.Since(t))
			}
		})
	}
}

// cpuSeconds is the user and system CPU of process pid (0: none).
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		log.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // USER_HZ
}

type rstats struct {
	cpu             float64
	calls, evalUsec uint64
}

// redisStats reads Redis's CPU seconds and its script calls and time.
func redisStats(ctx context.Context, rdb *redis.Client) rstats {
	var s rstats
	info, err := rdb.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		case k == "cmdstat_evalsha" || k == "cmdstat_eval" || k == "cmdstat_fcall":
			for _, kv := range strings.Split(v, ",") {
				a, b, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseUint(b, 10, 64)
				switch a {
				case "calls":
					s.calls += n
				case "usec":
					s.evalUsec += n
				}
			}
		}
	}
	return s
}
