// Command webhook-receiver is a webhook receiver to try the gateway's
// webhooks with (docs/webhooks.md): it checks each delivery's signature
// and timestamp, answers 2xx once it has the event, prints it, and drops a
// delivery it has already seen (the same X-LB-Delivery: at least once
// means a receiver may see one again).
//
//	go run ./examples/webhook-receiver --addr 127.0.0.1:9000 --secret a-long-random-secret
//
// A real receiver stores the event before answering and does the slow work
// (rewards, posts) afterwards.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	secret := flag.String("secret", os.Getenv("WEBHOOK_SECRET"), "the webhook's secret (env WEBHOOK_SECRET)")
	flag.Parse()
	if len(*secret) < 16 {
		log.Fatal("webhook-receiver: --secret (or WEBHOOK_SECRET) is required, 16 bytes at least")
	}
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		if !valid(*secret, r, body) {
			fmt.Printf("refused a delivery: bad signature or stale timestamp\n")
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("X-LB-Delivery")
		mu.Lock()
		again := seen[id]
		seen[id] = true
		mu.Unlock()
		if again {
			fmt.Printf("%s again (delivery %s): already handled\n", r.Header.Get("X-LB-Event"), id)
		} else {
			fmt.Printf("%s, signature ok: %s\n", r.Header.Get("X-LB-Event"), body)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	fmt.Printf("webhook-receiver listening on http://%s/\n", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

func valid(secret string, r *http.Request, body []byte) bool {
	ts := r.Header.Get("X-LB-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || math.Abs(float64(time.Now().Unix()-sec)) > 300 {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(r.Header.Get("X-LB-Signature")))
}
