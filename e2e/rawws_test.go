package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// rawWS is a hand-rolled WebSocket client: it writes any frame, legal or
// not (binary, invalid UTF-8, oversized pings, a 10 MB length), which a
// real client library refuses to produce.
type rawWS struct {
	c  net.Conn
	br *bufio.Reader
}

// WebSocket opcodes.
const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// rawDial upgrades GET /ws on addr with the given headers. A refused
// upgrade returns the response (status and body read) and a nil rawWS.
func rawDial(addr, path string, hdr http.Header) (*rawWS, *http.Response, []byte, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	key := make([]byte, 16)
	rand.Read(key)
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	if req.Header.Get("Sec-WebSocket-Protocol") == "" {
		req.Header.Set("Sec-WebSocket-Protocol", "lb.v1")
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		c.Close()
		return nil, resp, body, nil
	}
	c.SetDeadline(time.Time{})
	return &rawWS{c: c, br: br}, resp, nil, nil
}

// write sends one masked frame (fin set) with the given opcode.
func (w *rawWS) write(op byte, payload []byte) error {
	return w.writeFrame(true, op, payload, uint64(len(payload)))
}

// writeFrame writes a frame header claiming length n, then payload (which
// may be shorter: the rest can follow with writeMore).
func (w *rawWS) writeFrame(fin bool, op byte, payload []byte, n uint64) error {
	var hdr []byte
	b0 := op
	if fin {
		b0 |= 0x80
	}
	hdr = append(hdr, b0)
	switch {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, n)
	}
	// A zero mask key: masking is then the identity, and the frame is legal.
	hdr = append(hdr, 0, 0, 0, 0)
	w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.c.Write(append(hdr, payload...)); err != nil {
		return err
	}
	return nil
}

// frame is one frame read from the server.
type rawFrame struct {
	op      byte
	payload []byte
}

// read reads one server frame within d.
func (w *rawWS) read(d time.Duration) (rawFrame, error) {
	w.c.SetReadDeadline(time.Now().Add(d))
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return rawFrame{}, err
	}
	if h[1]&0x80 != 0 {
		return rawFrame{}, errors.New("server frame is masked")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return rawFrame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return rawFrame{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 1<<20 {
		return rawFrame{}, fmt.Errorf("server frame of %d bytes", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(w.br, p); err != nil {
		return rawFrame{}, err
	}
	return rawFrame{op: h[0] & 0x0F, payload: p}, nil
}

// closeCode is the status code of a close frame (1005 when it has none).
func (f rawFrame) closeCode() int {
	if len(f.payload) < 2 {
		return 1005
	}
	return int(binary.BigEndian.Uint16(f.payload))
}

func (w *rawWS) Close() { w.c.Close() }
