// Command fanout is the fan-out ceiling of `make bench`: a bare
// coder/websocket server that writes the same top frame bytes to every
// connection at a fixed interval, with the gateway's connection shape (one
// reader, one writer goroutine per connection, a one-slot latest-frame
// holder, a timeout per write) and nothing else. `wsgateway load` measures
// it exactly as it measures the gateway: it answers welcome and subscribe.
//
// With --echo it is instead the ingest floor: each connection gets the
// welcome, then every score frame is answered with a fixed ack (its id
// echoed, a running seq), read and written on the handler goroutine; no
// store, no frames. The same `wsgateway load` players drive it.
//
// With --hold the broadcast waits for SIGUSR1 and a second SIGUSR1 stops it,
// so `make bench` can read the resident memory of subscribed connections
// before any frame flows and time the frames alone.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/proto"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	interval := flag.Duration("interval", 100*time.Millisecond, "frame interval")
	top := flag.Int("top", 10, "entries per frame")
	echo := flag.Bool("echo", false, "answer score frames with a fixed ack instead of broadcasting")
	hold := flag.Bool("hold", false, "broadcast only between the first and the second SIGUSR1")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := &server{conns: make(map[*peer]struct{})}
	var h http.Handler = s
	if *echo {
		h = &echoServer{}
	} else {
		var usr chan os.Signal
		if *hold {
			// Registered before the listen: the script signals once it
			// sees the port, and an unhandled SIGUSR1 would end the process.
			usr = make(chan os.Signal, 2)
			signal.Notify(usr, syscall.SIGUSR1)
		}
		go func() {
			bctx := ctx
			if usr != nil {
				var cancel context.CancelFunc
				bctx, cancel = holdUntilSignal(ctx, usr)
				defer cancel()
			}
			s.broadcast(bctx, *interval, *top)
		}()
	}
	// `wsgateway load` asks GET /api/v1/boards and GET /api/v1/boards/{board}
	// before it dials (its preflight); answer as a gateway whose every board
	// exists.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/boards", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"boards":[]}`)
	})
	mux.HandleFunc("GET /api/v1/boards/{board}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"board":{"id":%q},"members":0}`, r.PathValue("board"))
	})
	mux.Handle("/", h)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	fmt.Printf("fanout listening on %s\n", *addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// holdUntilSignal waits for a signal on usr (or ctx's end) and returns a
// context that the next signal cancels.
func holdUntilSignal(ctx context.Context, usr chan os.Signal) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithCancel(ctx)
	select {
	case <-usr:
	case <-ctx.Done():
		return bctx, cancel
	}
	go func() {
		select {
		case <-usr:
			cancel()
		case <-bctx.Done():
		}
	}()
	return bctx, cancel
}

type server struct {
	mu    sync.Mutex // guards conns
	conns map[*peer]struct{}
}

// peer holds the newest frame not yet written (latest wins).
type peer struct {
	latest atomic.Pointer[[]byte]
	signal chan struct{} // capacity 1
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{proto.Subprotocol}, CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := r.Context()
	welcome, _ := json.Marshal(proto.Welcome{Type: proto.TypeWelcome, Member: "x", Role: "spectator", Node: "fanout"})
	if c.Write(ctx, websocket.MessageText, welcome) != nil {
		return
	}
	_, msg, err := c.Read(ctx)
	if err != nil {
		return
	}
	var req proto.Request
	json.Unmarshal(msg, &req)
	reply, _ := json.Marshal(proto.Subscribed{Type: proto.TypeSubscribed, ID: req.ID, Board: req.Board})
	if c.Write(ctx, websocket.MessageText, reply) != nil {
		return
	}
	p := &peer{signal: make(chan struct{}, 1)}
	s.mu.Lock()
	s.conns[p] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, p)
		s.mu.Unlock()
	}()
	ctx = c.CloseRead(ctx) // the reader: handles pings and close
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.signal:
		}
		b := p.latest.Load()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.Write(wctx, websocket.MessageText, *b)
		cancel()
		if err != nil {
			return
		}
	}
}

// broadcast encodes one frame per interval and hands the same bytes to
// every connection.
func (s *server) broadcast(ctx context.Context, interval time.Duration, n int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var seq int64
	var peers []*peer
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		seq++
		entries := make([]proto.Entry, n)
		for i := range entries {
			entries[i] = proto.Entry{Rank: int64(i + 1), Member: fmt.Sprintf("m%d", 1000+i), Score: seq*100 - int64(i)}
		}
		b, _ := json.Marshal(proto.Top{Type: proto.TypeTop, Board: "load", Seq: seq, Entries: entries, Total: 100000, TS: time.Now().UnixMilli()})
		s.mu.Lock()
		peers = peers[:0]
		for p := range s.conns {
			peers = append(peers, p)
		}
		s.mu.Unlock()
		for _, p := range peers {
			p.latest.Store(&b)
			select {
			case p.signal <- struct{}{}:
			default:
			}
		}
	}
}

// echoServer answers every score frame with a fixed ack.
type echoServer struct {
	seq atomic.Int64
}

func (s *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{proto.Subprotocol}, CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := r.Context()
	welcome, _ := json.Marshal(proto.Welcome{Type: proto.TypeWelcome, Member: "x", Role: "server", Node: "echo"})
	if c.Write(ctx, websocket.MessageText, welcome) != nil {
		return
	}
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		var req proto.Request
		if json.Unmarshal(msg, &req) != nil || req.Type != proto.TypeScore {
			continue
		}
		ack, _ := json.Marshal(proto.Ack{Type: proto.TypeAck, ID: req.ID, Board: req.Board, Member: req.Member,
			Score: 1, Rank: 1, Seq: s.seq.Add(1)})
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = c.Write(wctx, websocket.MessageText, ack)
		cancel()
		if err != nil {
			return
		}
	}
}
