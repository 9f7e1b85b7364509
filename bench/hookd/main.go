// Command hookd is a validation hook for benchmarks (docs/integrity.md):
// it checks each call's signature and answers accept, counting the calls
// and the bad ones; GET /count prints "<calls> <bad>".
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/wsgateway/wsgateway/webhook"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	secret := flag.String("secret", "", "the board's validate.secret")
	delay := flag.Duration("delay", 0, "wait this long before answering")
	flag.Parse()
	var calls, bad atomic.Int64
	accept := []byte(`{"verdict":"accept"}`)
	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		calls.Add(1)
		if err != nil || !webhook.Verify(*secret, r.Header.Get("X-LB-Timestamp"), body, r.Header.Get("X-LB-Signature")) {
			bad.Add(1)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if *delay > 0 {
			time.Sleep(*delay)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(accept)
	})
	http.HandleFunc("GET /count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d %d\n", calls.Load(), bad.Load())
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
