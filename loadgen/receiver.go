package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/proto"
)

// Frame kinds counted by receivers.
const (
	kindTop = iota
	kindView
	kindOther
	nFrameKinds
)

var frameKindNames = [nFrameKinds]string{"top", "view", "other"}

// receiver is a spectator or watcher: one raw WebSocket that subscribes
// once and then only reads. It does not decode frames with encoding/json:
// it scans for type, seq and ts, so that ten thousand of them measure the
// gateway rather than the generator's JSON decoder.
type receiver struct {
	conn    *websocket.Conn
	done    chan struct{}
	closing atomic.Bool // set by close: the end that follows is no drop
}

func (g *Generator) dialReceiver(ctx context.Context, token string, sub proto.Request) (*receiver, error) {
	conn, _, err := websocket.Dial(ctx, g.cfg.URL, &websocket.DialOptions{
		HTTPHeader:      http.Header{"Authorization": {"Bearer " + token}},
		Subprotocols:    []string{proto.Subprotocol},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	fail := func(err error) (*receiver, error) {
		conn.CloseNow()
		return nil, err
	}
	if _, _, err := conn.Read(ctx); err != nil { // welcome
		return fail(err)
	}
	b, _ := json.Marshal(sub)
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fail(err)
	}
	// The reply comes before any frame of the subscription.
	_, reply, err := conn.Read(ctx)
	if cerr := ctx.Err(); cerr != nil {
		// ctx ending during a read closes the connection (the library's
		// AfterFunc), even when the read itself succeeded: a receiver
		// handed out then would count as dropped.
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	if t := scanString(reply, `"type":"`); string(t) != proto.TypeSubscribed {
		return fail(fmt.Errorf("loadgen: subscribe answered %s", reply))
	}
	r := &receiver{conn: conn, done: make(chan struct{})}
	go g.receive(r)
	return r, nil
}

// receive counts and times frames until the connection ends.
func (g *Generator) receive(r *receiver) {
	defer close(r.done)
	var buf bytes.Buffer
	for {
		_, rd, err := r.conn.Reader(context.Background())
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(rd)
		}
		if err != nil {
			if !r.closing.Load() {
				g.drop(err)
			}
			return
		}
		if !g.measuring.Load() {
			continue
		}
		now := time.Now()
		b := buf.Bytes()
		kind := kindOther
		switch string(scanString(b, `"type":"`)) {
		case proto.TypeTop:
			kind = kindTop
		case proto.TypeView:
			kind = kindView
		}
		g.frames[kind].Add(1)
		if kind == kindOther {
			continue
		}
		if seq, ok := scanInt(b, `"seq":`); ok {
			if at, ok := g.acks.get(seq); ok {
				g.fresh.Record(now.Sub(at))
			}
		}
		if ts, ok := scanInt(b, `"ts":`); ok && ts > 0 {
			g.lag.Record(now.Sub(time.UnixMilli(ts)))
		}
	}
}

// drop counts a receiver's connection lost during the run, by why.
func (g *Generator) drop(err error) {
	why := dropReason(err)
	g.dropped.Add(1)
	g.mu.Lock()
	g.drops[why]++
	g.mu.Unlock()
}

// dropReason names why a connection ended, without the addresses a socket
// error carries, so that a mass drop counts under a few keys rather than
// one per connection.
func dropReason(err error) string {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return strings.TrimSpace(fmt.Sprintf("close %d %s", int(ce.Code), ce.Reason))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF without a close frame"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.Is(err, net.ErrClosed):
		return "use of closed network connection"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	return err.Error()
}

func (r *receiver) close() {
	r.closing.Store(true)
	r.conn.Close(websocket.StatusNormalClosure, "")
	<-r.done
}

// scanString returns the string value following key (which ends with the
// opening quote), as a slice of b: converting it only to compare it costs
// no allocation per frame. Values the gateway writes here never contain
// escapes.
func scanString(b []byte, key string) []byte {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return nil
	}
	b = b[i+len(key):]
	j := bytes.IndexByte(b, '"')
	if j < 0 {
		return nil
	}
	return b[:j]
}

// scanInt returns the integer following key. Member ids cannot contain
// quotes, and an escaped quote in a name is preceded by a backslash, so the
// first match is the top-level field.
func scanInt(b []byte, key string) (int64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	b = b[i+len(key):]
	j := 0
	for j < len(b) && (b[j] == '-' || (b[j] >= '0' && b[j] <= '9')) {
		j++
	}
	n, err := strconv.ParseInt(string(b[:j]), 10, 64)
	return n, err == nil
}
