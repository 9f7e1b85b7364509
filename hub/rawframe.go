package hub

import "encoding/binary"

// Live frames are written straight to the corkConn as complete WebSocket
// frames, not through the library's Write. A spectator's writer writes one
// frame per interval and little else, and for such a writer the library's
// per-message work was a fifth of the gateway's CPU at 10,000 spectators:
// its write lock (a channel select), resetting its message writer, copying
// the payload into its bufio.Writer and flushing that into the socket. A
// server frame is the header and the payload as they are (RFC 6455 §5.2:
// no mask from a server; compression is disabled, hub.go), so the hub
// builds it in one buffer and writes it in one write(2), or adds it to the
// corked batch.
//
// The library still writes everything else (replies, pings, pongs, close).
// Its frames and these never interleave within a frame: every corkConn
// write holds corkConn.mu; the library's control frames (from the reader)
// are small and reach the corkConn in one Write; and its data frames, like
// these, come from the connection's one writer goroutine.

// maxFrameHeader is the longest header of a server frame.
const maxFrameHeader = 10

// appendTextHeader appends the header of an unmasked, final text frame
// with an n-byte payload.
func appendTextHeader(b []byte, n int) []byte {
	switch {
	case n < 126:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return append(b, 0x81, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0x81, 127), uint64(n))
	}
}

// writeText writes p as one text message in one frame: in one socket
// write, or collected while corked.
func (c *corkConn) writeText(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && c.buf != nil && len(*c.buf)+maxFrameHeader+len(p) > maxCork {
		if err := c.flushLocked(); err != nil {
			return err
		}
	}
	if c.buf == nil {
		c.buf = c.pool.Get().(*[]byte)
	}
	*c.buf = append(appendTextHeader(*c.buf, len(p)), p...)
	if c.corked && len(*c.buf) <= maxCork {
		return nil
	}
	return c.flushLocked()
}
