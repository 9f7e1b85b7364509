// Command webhookload is the webhook load check of bench/webhooks.sh and
// bench/blackhole.sh: it makes N boards that end in the same second (one
// score each), registers a webhook for board.final on a receiver of its
// own, and reports when every board's delivery has arrived. It prints
// "ends <unix seconds>" once the boards are set up, so the caller can put
// a score load around that second. With --blackhole it first registers
// another webhook for the same events on a receiver that accepts and never
// answers, whose deliveries fall due alongside.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/auth"
)

type result struct {
	Boards       int     `json:"boards"`
	Delivered    int     `json:"delivered"`      // distinct deliveries of distinct boards
	Requests     int     `json:"requests"`       // every POST received (retries included)
	FirstAfterS  float64 `json:"first_after_s"`  // first delivery, seconds after ends_at
	MedianAfterS float64 `json:"median_after_s"` // the boards' first deliveries' median, seconds after ends_at
	LastAfterS   float64 `json:"last_after_s"`   // last board's first delivery, seconds after ends_at
}

// sink counts board.final deliveries by board.
type sink struct {
	mu       sync.Mutex
	first    map[string]time.Time // board → first arrival
	requests int
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var d struct{ Event, Board string }
	_ = json.Unmarshal(b, &d)
	now := time.Now()
	s.mu.Lock()
	s.requests++
	if _, ok := s.first[d.Board]; !ok && d.Event == "board.final" {
		s.first[d.Board] = now
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "gateway HTTP base URL")
	secret := flag.String("secret", "", "the gateway's HS256 key (admin and server tokens are minted from it)")
	n := flag.Int("boards", 1000, "boards that end in the same second")
	lead := flag.Duration("lead", 30*time.Second, "how far ahead of now the boards end (setup must fit in it)")
	wait := flag.Duration("wait", 2*time.Minute, "how long to wait for every delivery after the end")
	out := flag.String("json", "", "write the result here")
	hole := flag.Bool("blackhole", false, "also register a webhook for the same events on a receiver that never answers")
	flag.Parse()
	log.SetFlags(0)
	adm, err := auth.MintHS256([]byte(*secret), auth.Claims{Sub: "bench", Role: auth.Admin, TTL: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := auth.MintHS256([]byte(*secret), auth.Claims{Sub: "bench-game", Role: auth.Server, TTL: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	sk := &sink{first: map[string]time.Time{}}
	go func() { _ = http.Serve(ln, sk) }()

	ctx := context.Background()
	do := func(method, path, tok string, body any) {
		js, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, method, *base+path, bytes.NewReader(js))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatalf("%s %s: %v", method, path, err)
		}
		rb, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			log.Fatalf("%s %s: %d %s", method, path, res.StatusCode, rb)
		}
	}
	if *hole {
		bh, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			for {
				c, err := bh.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(io.Discard, c) }() // read, never answer
			}
		}()
		do("PUT", "/api/v1/webhooks/bench-hole", adm, map[string]any{
			"url": "http://" + bh.Addr().String() + "/hook", "secret": "bench-webhook-secret-0123", "events": []string{"board.final"},
		})
	}
	do("PUT", "/api/v1/webhooks/bench", adm, map[string]any{
		"url": "http://" + ln.Addr().String() + "/hook", "secret": "bench-webhook-secret-0123", "events": []string{"board.final"},
	})
	ends := time.Now().Add(*lead).Truncate(time.Second)
	for i := range *n {
		id := fmt.Sprintf("whl-%04d", i)
		do("PUT", "/api/v1/boards/"+id, adm, map[string]any{"ends_at": ends.UTC().Format(time.RFC3339), "standings": 10})
		do("POST", "/api/v1/boards/"+id+"/scores", srv, []map[string]any{{"id": "1", "member": "m1", "delta": 1}})
	}
	if time.Now().After(ends.Add(-time.Second)) {
		log.Fatalf("setup took past the end (%s): raise --lead", ends.Format(time.RFC3339))
	}
	fmt.Printf("ends %d\n", ends.Unix())

	deadline := ends.Add(*wait)
	for time.Now().Before(deadline) {
		sk.mu.Lock()
		got := len(sk.first)
		sk.mu.Unlock()
		if got >= *n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	sk.mu.Lock()
	r := result{Boards: *n, Delivered: len(sk.first), Requests: sk.requests, FirstAfterS: -1, MedianAfterS: -1, LastAfterS: -1}
	var after []float64
	for _, at := range sk.first {
		after = append(after, at.Sub(ends).Seconds())
	}
	sk.mu.Unlock()
	if len(after) > 0 {
		slices.Sort(after)
		r.FirstAfterS, r.MedianAfterS, r.LastAfterS = after[0], after[len(after)/2], after[len(after)-1]
	}
	js, _ := json.MarshalIndent(r, "", "  ")
	fmt.Println(string(js))
	if *out != "" {
		if err := os.WriteFile(*out, js, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if r.Delivered < *n {
		os.Exit(1)
	}
}
