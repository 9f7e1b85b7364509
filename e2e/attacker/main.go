// Command attacker is the hostile side of e2e.TestHostileSoak, run as a
// process of its own so that its CPU is not the load generator's: on a
// real network the attackers are other machines, and what the soak
// compares is what they cost the gateway, not what they cost the process
// measuring the normal clients' latency.
//
// It runs, until stdin closes or SIGTERM/SIGINT:
//   - -flooders clients that each dial the WebSocket, send empty pings as
//     fast as the socket takes them until the gateway closes the
//     connection, and dial again at once;
//   - one player (-creator) naming a new board in every score, reading
//     each reply.
//
// Tokens come from the environment (ATTACK_FLOOD_TOKENS, comma-separated,
// one per flooder; ATTACK_CREATE_TOKEN; either may be empty: no such
// attacker), never from flags: a flag shows in
// every process listing. With -source the attacker dials from that local
// address (e.g. 127.0.0.2) and with -forwarded-for it sends that
// X-Forwarded-For hop: against a gateway that trusts -source as a proxy,
// its connections count against the per-address cap of the forwarded
// address, as a remote attacker's do.
//
// On exit it writes one JSON object of counts (report) to stdout.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/proto"
)

// report is what the attackers did, written as JSON on exit.
type report struct {
	FloodDials    int64 `json:"flood_dials"`   // upgrades accepted
	FloodRefused  int64 `json:"flood_refused"` // upgrades refused (a cap)
	FloodCloses   int64 `json:"flood_closes"`  // connections the gateway closed with 1008
	FloodOther    int64 `json:"flood_other"`   // connections that ended otherwise
	FloodFrames   int64 `json:"flood_frames"`  // empty pings written
	CloseMillis   int64 `json:"close_ms_max"`  // longest dial-to-1008 of a flood connection
	Scores        int64 `json:"scores"`        // board-naming scores answered
	Acked         int64 `json:"acked"`         // ... with an ack (a board created)
	Limited       int64 `json:"limit_reached"` // ... refused: auto-created boards at their cap
	RateLimited   int64 `json:"rate_limited"`  // ... refused: the player's rate
	OtherReplies  int64 `json:"other_replies"` // ... anything else
	CreatorDials  int64 `json:"creator_dials"` // board-naming connections opened
	DialFailures  int64 `json:"dial_failures"` // dials that failed below HTTP
	ElapsedMillis int64 `json:"elapsed_ms"`    // how long the attack ran
	closeMax      atomic.Int64
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "attacker:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "", "the gateway's host:port")
	source := flag.String("source", "", "local address to dial from (empty: any)")
	xff := flag.String("forwarded-for", "", "X-Forwarded-For hop to send (empty: none)")
	flag.Parse()
	if *addr == "" {
		return errors.New("-addr is required")
	}
	var floodToks []string
	if v := os.Getenv("ATTACK_FLOOD_TOKENS"); v != "" {
		floodToks = strings.Split(v, ",")
	}
	createTok := os.Getenv("ATTACK_CREATE_TOKEN")
	if len(floodToks) == 0 && createTok == "" {
		return errors.New("ATTACK_FLOOD_TOKENS or ATTACK_CREATE_TOKEN is required")
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	if *source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(*source)}
	}
	a := &attack{addr: *addr, dialer: &d, xff: *xff}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	go func() { // the parent closing stdin (or dying) ends the attack
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()

	start := time.Now()
	var wg sync.WaitGroup
	for _, tok := range floodToks {
		wg.Go(func() {
			for ctx.Err() == nil {
				a.flood(ctx, tok)
			}
		})
	}
	if createTok != "" {
		wg.Go(func() {
			for ctx.Err() == nil {
				a.createBoards(ctx, createTok)
			}
		})
	}
	wg.Wait()
	a.r.ElapsedMillis = time.Since(start).Milliseconds()
	a.r.CloseMillis = a.r.closeMax.Load()
	return json.NewEncoder(os.Stdout).Encode(&a.r)
}

type attack struct {
	addr   string
	dialer *net.Dialer
	xff    string
	r      report
}

func (a *attack) header(tok string) http.Header {
	h := http.Header{"Authorization": {"Bearer " + tok}}
	if a.xff != "" {
		h.Set("X-Forwarded-For", a.xff)
	}
	return h
}

// flood dials, floods empty pings until the connection ends, and counts
// how it ended.
func (a *attack) flood(ctx context.Context, tok string) {
	start := time.Now()
	c, br, err := a.upgrade(ctx, tok)
	switch {
	case err != nil:
		atomic.AddInt64(&a.r.DialFailures, 1)
		pause(ctx, 50*time.Millisecond)
		return
	case c == nil:
		atomic.AddInt64(&a.r.FloodRefused, 1)
		pause(ctx, 50*time.Millisecond) // refused (a cap): try again shortly
		return
	}
	atomic.AddInt64(&a.r.FloodDials, 1)
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	// 256 masked empty pings per write.
	const perWrite = 256
	batch := make([]byte, 0, perWrite*6)
	for range perWrite {
		batch = append(batch, 0x89, 0x80, 0, 0, 0, 0)
	}
	// The reader reports the 1008 and closes the socket, which ends the
	// writer: the flooder dials again at once.
	closed := make(chan error, 1)
	go func() {
		err := readUntilClose(br)
		if err == nil {
			a.closed(time.Since(start))
		}
		c.Close()
		closed <- err
	}()
	for ctx.Err() == nil {
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(batch); err != nil {
			break
		}
		atomic.AddInt64(&a.r.FloodFrames, perWrite)
	}
	c.Close()
	if err := <-closed; err != nil && ctx.Err() == nil {
		if atomic.AddInt64(&a.r.FloodOther, 1) <= 3 {
			fmt.Fprintln(os.Stderr, "attacker: a flood connection ended without 1008:", err)
		}
	}
}

// closed counts a 1008 close that came d after the dial.
func (a *attack) closed(d time.Duration) {
	atomic.AddInt64(&a.r.FloodCloses, 1)
	ms := d.Milliseconds()
	for {
		old := a.r.closeMax.Load()
		if ms <= old || a.r.closeMax.CompareAndSwap(old, ms) {
			return
		}
	}
}

// upgrade dials and upgrades GET /ws by hand (a WebSocket library would
// not write an endless ping stream unread). A refused upgrade returns a
// nil conn and no error.
func (a *attack) upgrade(ctx context.Context, tok string) (net.Conn, *bufio.Reader, error) {
	c, err := a.dialer.DialContext(ctx, "tcp", a.addr)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	key := make([]byte, 16)
	rand.Read(key)
	req, _ := http.NewRequest("GET", "http://"+a.addr+"/ws", nil)
	req.Header = a.header(tok)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	req.Header.Set("Sec-WebSocket-Protocol", proto.Subprotocol)
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, nil, nil
	}
	c.SetDeadline(time.Time{})
	return c, br, nil
}

// readUntilClose reads server frames until a close frame: nil if its code
// is 1008, else an error saying what came instead.
func readUntilClose(br *bufio.Reader) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:2]); err != nil {
			return err
		}
		op, n := hdr[0]&0x0F, uint64(hdr[1]&0x7F)
		switch n {
		case 126:
			if _, err := io.ReadFull(br, hdr[:2]); err != nil {
				return err
			}
			n = uint64(binary.BigEndian.Uint16(hdr[:2]))
		case 127:
			if _, err := io.ReadFull(br, hdr[:8]); err != nil {
				return err
			}
			n = binary.BigEndian.Uint64(hdr[:8])
		}
		if op == 0x8 {
			var code [2]byte
			if n < 2 {
				return errors.New("a close frame without a code")
			}
			if _, err := io.ReadFull(br, code[:]); err != nil {
				return err
			}
			if c := binary.BigEndian.Uint16(code[:]); c != 1008 {
				return fmt.Errorf("close code %d", c)
			}
			return nil
		}
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			return err
		}
	}
}

// createBoards scores on a new board every time, reading each reply, until
// the connection or ctx ends.
func (a *attack) createBoards(ctx context.Context, tok string) {
	hc := &http.Client{Transport: &http.Transport{DialContext: a.dialer.DialContext}}
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	ws, _, err := websocket.Dial(dctx, "ws://"+a.addr+"/ws", &websocket.DialOptions{
		Subprotocols: []string{proto.Subprotocol}, HTTPHeader: a.header(tok), HTTPClient: hc,
	})
	dcancel()
	if err != nil {
		atomic.AddInt64(&a.r.DialFailures, 1)
		pause(ctx, 50*time.Millisecond)
		return
	}
	atomic.AddInt64(&a.r.CreatorDials, 1)
	defer ws.CloseNow()
	if _, _, err := ws.Read(ctx); err != nil { // welcome
		return
	}
	for n := 0; ctx.Err() == nil; n++ {
		id := strconv.Itoa(n)
		msg := fmt.Sprintf(`{"type":"score","id":"c%s","board":"atk-%d-%s","delta":1}`, id, time.Now().UnixNano(), id)
		if ws.Write(ctx, websocket.MessageText, []byte(msg)) != nil {
			return
		}
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		atomic.AddInt64(&a.r.Scores, 1)
		var r struct{ Type, Code string }
		json.Unmarshal(b, &r)
		switch {
		case r.Type == proto.TypeAck:
			atomic.AddInt64(&a.r.Acked, 1)
		case r.Code == proto.CodeLimitReached:
			atomic.AddInt64(&a.r.Limited, 1)
		case r.Code == proto.CodeRateLimited:
			atomic.AddInt64(&a.r.RateLimited, 1)
			pause(ctx, 20*time.Millisecond)
		default:
			atomic.AddInt64(&a.r.OtherReplies, 1)
		}
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
