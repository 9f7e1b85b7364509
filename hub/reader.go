package hub

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub/sock"
	"github.com/wsgateway/wsgateway/proto"
)

// A connection's reader waits for the client's bytes, and only then asks
// the library for a message and handles it. A connection that cannot
// score (a spectator) waits with no goroutine at all: its reader parks the
// socket on the hub's poller (sock.Conn.Park) and ends, and the poller
// starts a fresh reader (woken) once bytes come, which handles them and
// parks again. So an idle spectator pays no stack, and the deep stack of
// a message's handling (the library's read, decoding, the live engine,
// the store, JSON encoding) dies with the goroutine that handled it. Where
// a socket cannot be parked (no descriptor: TLS, a pipe) the reader waits
// in sock.Conn.Wait, with little on its stack, on a fresh goroutine after
// each message. One that can score reads and handles its scores, the hot
// path, on its one reader, and anything else apart (apart). A panic in
// either is confined to the connection (crash.go).

// start sets an accepted connection going, on the upgrade's goroutine:
// the welcome (written in the writer's place when it can be, as the
// socket is free), the ping and expiry entries, and the reader on a
// goroutine of its own. The upgrade's deep stack (the HTTP request, token
// verification, the handshake, encoding the welcome) stays with the
// upgrade's goroutine, which ends here.
func (c *conn) start() {
	defer func() {
		// The connection is registered: a panic here asks for the 1011
		// close, and the reader reads it through and ends the connection,
		// as for a panic anywhere else.
		if v := recover(); v != nil {
			c.crashed(v)
			go c.reader()
		}
	}()
	if hook := c.h.testPanic; hook != nil {
		hook("start", c.sub)
	}
	c.ws.SetReadLimit(int64(c.h.cfg.MaxMessage))
	if b := c.encode(c.welcome()); b != nil && c.pushQuiet(b) {
		c.writeAcks()
	}
	c.armExpiry()
	c.h.wheel.add(c, timerPing, pingAt(time.Now().Add(jitter(c.h.cfg.PingInterval)), c.h.cfg.PingInterval))
	go c.reader()
}

// reader is the connection's reading goroutine: it reads until the
// connection is ending, then ends it (end), or until a spectator waits:
// it parks the socket on the poller, or, where it cannot, starts a fresh
// reader to wait after a message, and this one (its stack grown by the
// handling) ends. So a spectator has at most one goroutine at a time (the
// one handling a message writes its replies too), none while it waits.
// Its frame holds nothing.
func (c *conn) reader() { c.run(false) }

// woken is the reader the poller starts for a parked connection: the
// client's bytes (or the end) are in its socket, so it waits for them
// before it may park again.
func (c *conn) woken() { c.run(true) }

func (c *conn) run(woke bool) {
	if stop, err := c.read(woke); stop {
		c.end(err)
	}
}

// read reads and handles one message at a time, in order (R2): each
// request's reply is queued, or holds its slot in the window of scores in
// flight (window.go), before the next is read. stop reports the
// connection ending: err when it failed, nil when it stopped reading for
// a close under way (a panic stops it so, the writer closing with 1011:
// crash.go); else the poller or a new reader goes on. woke: the poller
// saw bytes, so the first wait must not park.
func (c *conn) read(woke bool) (stop bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.quiet.Store(false)
			c.crashed(v)
			c.mu.Lock()
			c.busy = false
			c.mu.Unlock()
			stop, err = true, nil
		}
	}()
	ctx := c.h.ctx
	for {
		// A scorer reads at once (its stack is deep anyway); a spectator
		// parks, or else waits without a buffer or a read on its stack
		// (sock.Conn.Wait).
		scorer := c.scorer()
		switch {
		case scorer:
			err = c.s.Fill()
		case !woke && c.s.Park():
			return false, nil
		default:
			err = c.s.Wait()
		}
		woke = false
		if err != nil {
			if c.aborted.Load() {
				return true, nil // ended on purpose: the reader has nothing to add
			}
			return true, err
		}
		if !scorer && c.s.SkipPongs() {
			continue // a pong to the node's ping: wait on, on this stack
		}
		// The replies queued while the reader handles what the client sent
		// (all of a pipelined stream) wake no writer (quiet): the reader
		// writes them after, in one write in the writer's place that never
		// waits (a full socket leaves the rest to a writer, and the reader
		// reads on: the reply queue's bound holds), rather than a writer
		// started for them.
		c.quiet.Store(true)
		stop, err = c.step(ctx)
		if stop || !scorer || !c.s.Buffered() || c.replies.len() >= maxHeldReplies {
			c.quiet.Store(false)
			if c.quietWork.Swap(false) {
				c.flushDirect()
			}
		}
		if stop {
			return true, err
		}
		if !scorer && !c.scorer() {
			if !c.s.Park() {
				go c.reader()
			}
			return false, nil
		}
	}
}

// maxHeldReplies bounds the replies the reader queues before it writes
// them, well below the reply queue's bound (R12).
const maxHeldReplies = 64

// scorer reports whether the connection's role may send scores. Reader
// only.
func (c *conn) scorer() bool { return !c.anon && c.p.Role != auth.Spectator }

// step reads one message, if the bytes waiting hold one, and handles it;
// stop ends the reading, with err when the connection failed.
func (c *conn) step(ctx context.Context) (stop bool, err error) {
	typ, r, err := c.s.NextMessage(c.ws)
	switch {
	case errors.Is(err, sock.ErrIdle):
		return false, nil
	case err != nil && c.aborted.Load():
		return true, nil
	case err != nil:
		return true, err
	}
	return c.message(ctx, typ, r)
}

// apart answers a request other than a score (request) on a goroutine of
// its own when the reader lasts (a scorer's); errCrashed when it
// panicked.
func (c *conn) apart(ctx context.Context, req proto.Message) error {
	if !c.scorer() {
		return c.request(ctx, req) // this reader ends after the message
	}
	done := make(chan error, 1)
	go func() {
		err := errCrashed
		defer func() { done <- err }()
		defer c.guard()
		err = c.request(ctx, req)
	}()
	return <-done
}

// message reads and handles one message; stop ends the reading, with err
// when the connection failed.
func (c *conn) message(ctx context.Context, typ websocket.MessageType, r io.Reader) (stop bool, err error) {
	if typ != websocket.MessageText {
		c.settle(ctx) // the scores read before are answered first
		c.requestClose(websocket.StatusUnsupportedData, "binary frames are not supported", true)
		return true, nil
	}
	buf := c.h.getBuf()
	defer c.h.putBuf(buf)
	if _, err := buf.ReadFrom(r); err != nil { // over the read limit: the library closes with 1009
		return true, err
	}
	msg := buf.Bytes()
	if !utf8.Valid(msg) {
		c.settle(ctx)
		c.requestClose(websocket.StatusInvalidFramePayloadData, "invalid UTF-8", true)
		return true, nil
	}
	c.mu.Lock()
	if c.committed {
		c.mu.Unlock()
		return false, nil // arrived after our close frame was decided
	}
	c.busy = true
	c.mu.Unlock()

	c.handle(ctx, msg)

	c.mu.Lock()
	c.busy = false
	c.mu.Unlock()
	if c.draining.Load() {
		c.poke()
		return true, nil // R14: answer what was read, read nothing more
	}
	return c.closeAsked.Load(), nil
}

// end ends the connection once its reader stopped: after a failure
// without a handshake (abort); then the reader takes the writer's part
// until the close is written (finish), and lets go of what the connection
// held: its subscriptions, its registration, its reservation.
func (c *conn) end(rerr error) {
	h := c.h
	rv := reservation{h: h, ipKey: c.ipKey, mKey: c.mKey, node: c.nodeSlot, sock: c.s}
	defer rv.release()
	defer func() {
		h.m.connOpened(c.role, -1)
		if h.reg.remove(c) == 0 {
			select {
			case h.emptied <- struct{}{}:
			default:
			}
		}
	}()
	defer func() {
		if v := recover(); v != nil { // outside the reader's guard
			c.crashed(v)
			c.ws.CloseNow()
		}
	}()
	if rerr != nil {
		c.abort()
	}
	c.finish()
	if c.s.TimedOut() { // a write blocked for WriteTimeout: a slow consumer (R12)
		h.m.slowConsumerClose()
		h.m.closed(strconv.Itoa(int(websocket.StatusPolicyViolation)))
	}
	c.timers.c.Store(nil) // its entries on the wheel are dropped as they come due
	h.log.Debug("hub: connection closed", "member", c.sub, "role", c.p.Role, "read", rerr)
	c.gate.Lock()
	out := c.out
	c.gate.Unlock()
	if out != nil {
		h.deps.Live.Drop(out)
	}
	c.ws.CloseNow()
}
