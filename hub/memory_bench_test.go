package hub_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/hub"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkConnMemory is what the gateway holds per connection for its
// whole life, by owner: N clients on real loopback sockets through the
// node's one server (fasthttp, the upgrade through internal/hijack), in
// four states:
//
//   - anonymous: a token-less spectator (--public-read), nothing sent;
//   - idle: authenticated, nothing sent;
//   - subscribed: also subscribed to a top-10, its first frame read;
//   - burst: subscribed, then a page of 100 entries asked and read and
//     frames flowing for a few intervals, then quiet again: what a burst
//     leaves behind.
//
// The clients are bare TCP sockets (no goroutine, no buffer once set up),
// so what the connections add is the gateway's. Every allocation is
// profiled (MemProfileRate 1) and charged to an owner by its call stack
// (owners below); the live heap and the goroutine stacks are read after
// collections (pooled buffers count only while something holds them).
// Kernel socket memory (the gateway's sockets' skmem from ss, where ss
// exists) is reported apart: it is not the process's RSS.
func BenchmarkConnMemory(b *testing.B) {
	for _, state := range []string{"anonymous", "idle", "subscribed", "burst"} {
		b.Run(state, func(b *testing.B) { benchMemory(b, state) })
	}
}

// memOwners name who holds a connection's bytes: the first rule, from the
// allocation outwards, whose function name appears on the stack.
var memOwners = []struct{ owner, fn string }{
	{"client", "hub_test."}, // the benchmark's own sockets
	{"readbuf", "bufio.NewReaderSize"},
	{"writebuf", "bufio.NewWriterSize"},
	{"writebuf", "hub/sock.(*Conn).Text"},
	{"timers", "time.AfterFunc"},
	{"timers", "time.NewTimer"},
	{"timers", "context.AfterFunc"},
	{"timers", "context.WithCancel"},
	{"timers", "hub.(*wheel)"},
	{"subscriptions", "live.(*Outbox).open"},
	{"subscriptions", "hub.(*conn).subscribe"},
	{"subscriptions", "live.(*Engine)"},
	{"conn", "hub/sock.New"},
	{"conn", "hub/sock.Accept"},
	{"conn", "hub.newConn"},
	{"conn", "live.NewOutbox"},
	{"conn", "hub.(*registry)"},
	{"library", "coder/websocket."},
	{"socket", "net.(*netFD)"},
	{"socket", "internal/poll"},
	{"socket", "net.newFD"},
	{"handshake", "internal/hijack."},
	{"handshake", "auth."},
	{"handshake", "hub.(*Hub).ServeHTTP"},
}

// memOwnerNames is the report's order.
var memOwnerNames = []string{"readbuf", "writebuf", "conn", "library", "subscriptions", "timers", "socket", "handshake", "other"}

func benchMemory(b *testing.B, state string) {
	conns := 1000
	in := newInfra(b, memoryKind)
	g := in.gateway(b, gwOptions{cfg: func(c *hub.Config) { c.PublicRead = true; c.MaxConnsPerIP = -1 }})
	g.board("mem", func(bd *rank.Board) { bd.Public = true })
	srv := g.dial(in.token(b, "srv", auth.Server))
	for i := range 120 {
		srv.score("mem", fmt.Sprint("m", i), int64(i))
	}
	host := mustHost(b, g.URL)
	tokens := make([]string, conns)
	if state != "anonymous" {
		for i := range tokens {
			tokens[i] = in.token(b, fmt.Sprint("spec", i), auth.Spectator)
		}
	}
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()
	for b.Loop() {
		before := memSnapshot()
		socks := make([]net.Conn, conns)
		for i := range socks {
			socks[i] = rawSpectator(b, host, tokens[i], state != "anonymous" && state != "idle")
		}
		if state == "burst" {
			burst(b, srv, socks)
		}
		after := memSnapshot()
		kernel := socketMemory(host)
		n := float64(conns)
		b.ReportMetric(float64(after.heap+after.stack-before.heap-before.stack)/n, "B/conn")
		b.ReportMetric(float64(after.heap-before.heap)/n, "heap-B/conn")
		b.ReportMetric(float64(after.stack-before.stack)/n, "stack-B/conn")
		b.ReportMetric(float64(after.goroutines-before.goroutines)/n, "goroutines/conn")
		for _, o := range memOwnerNames {
			b.ReportMetric(float64(after.owners[o]-before.owners[o])/n, o+"-B/conn")
		}
		if kernel >= 0 {
			b.ReportMetric(float64(kernel)/n, "kernel-B/conn")
		}
		if testing.Verbose() {
			for _, l := range after.top(before, 40) {
				b.Logf("%s", l)
			}
		}
		for _, s := range socks {
			s.Close()
		}
		// The next run's (or sub-benchmark's) baseline must not hold these.
		testenv.Until(b, 30*time.Second, "the connections to end", func() bool { return g.Hub.Conns() == 1 })
	}
}

// burst asks every client for a page of 100 entries, moves the top for a
// few intervals, and reads every client's socket dry.
func burst(b *testing.B, srv *wsClient, socks []net.Conn) {
	page := maskedText(`{"type":"page","id":"p","board":"mem","offset":0,"limit":100}`)
	for _, s := range socks {
		if _, err := s.Write(page); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		srv.score("mem", fmt.Sprint("m", i), int64(1000+i))
		time.Sleep(5 * time.Millisecond)
	}
	var wg sync.WaitGroup
	for _, s := range socks {
		wg.Go(func() { drain(b, s) })
	}
	wg.Wait()
}

// drain reads s until it has been quiet for a while.
func drain(b *testing.B, s net.Conn) {
	var buf [16 << 10]byte
	for {
		s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := s.Read(buf[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				s.SetReadDeadline(time.Time{})
				return
			}
			b.Error(err)
			return
		}
	}
}

// memState is the process's live heap by owner, its stacks and goroutines.
type memState struct {
	heap, stack int64
	goroutines  int
	owners      map[string]int64
	sites       map[string]int64 // other's allocation sites
}

func memSnapshot() memState {
	for range 3 { // the profile is up to two cycles old; the second empties the pools
		runtime.GC()
	}
	s := memState{goroutines: runtime.NumGoroutine(), owners: map[string]int64{}, sites: map[string]int64{}}
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(ms)
	s.heap, s.stack = int64(ms[0].Value.Uint64()), int64(ms[1].Value.Uint64())
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	for _, r := range recs {
		owner, site := ownerOf(r.Stack())
		s.owners[owner] += r.InUseBytes()
		s.sites[owner+": "+site] += r.InUseBytes()
	}
	return s
}

// ownerOf charges an allocation's stack to an owner (memOwners); site is
// the frame that named it (or, for "other", the innermost frame outside
// the runtime), for the verbose listing.
func ownerOf(stk []uintptr) (owner, site string) {
	frames := runtime.CallersFrames(stk)
	var names []string
	for {
		f, more := frames.Next()
		names = append(names, f.Function)
		if !more {
			break
		}
	}
	for _, name := range names {
		for _, o := range memOwners {
			if strings.Contains(name, o.fn) {
				return o.owner, name
			}
		}
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "runtime.") && !strings.HasPrefix(name, "internal/") {
			return "other", name
		}
	}
	return "other", strings.Join(names, " < ")
}

// top lists the largest growths of allocation sites since before.
func (s memState) top(before memState, n int) []string {
	type site struct {
		name string
		b    int64
	}
	var out []site
	for k, v := range s.sites {
		if d := v - before.sites[k]; d > 0 {
			out = append(out, site{k, d})
		}
	}
	slices.SortFunc(out, func(a, b site) int { return int(b.b - a.b) })
	var lines []string
	for _, x := range out[:min(n, len(out))] {
		lines = append(lines, fmt.Sprintf("%8d B  %s", x.b, x.name))
	}
	return lines
}

// socketMemory is the kernel memory of the server's side of the
// connections to host (skmem's rmem_alloc, wmem_alloc, fwd_alloc,
// wmem_queued, opt_mem summed), or -1 without ss.
func socketMemory(host string) int64 {
	_, port, _ := net.SplitHostPort(host)
	out, err := exec.Command("ss", "-Htnm", "state", "established", "sport = :"+port).Output()
	if err != nil {
		return -1
	}
	var sum int64
	for _, f := range strings.FieldsFunc(string(out), func(r rune) bool { return r == ',' || r == '(' || r == ')' || r == ' ' || r == '\n' || r == '\t' }) {
		for _, k := range []string{"r", "t", "f", "w", "o"} {
			if v, ok := strings.CutPrefix(f, k); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					sum += n
				}
			}
		}
	}
	return sum
}

func mustHost(b testing.TB, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		b.Fatal(err)
	}
	return p.Host
}

// rawDial upgrades a bare TCP connection with token; br has read the
// response's head, frames follow.
func rawDial(t testing.TB, host, token string) (nc net.Conn, br *bufio.Reader) {
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(nc, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Authorization: Bearer %s\r\n\r\n", host, key, proto.Subprotocol, token)
	br = bufio.NewReader(nc)
	readUntil(t, nc, br, "\r\n\r\n")
	return nc, br
}

// rawSpectator upgrades a bare TCP connection (with token, or none),
// reads up to the welcome (and, when subscribe, sends a subscribe to a
// top-10 of board "mem" and reads up to its first top frame), and returns
// the socket.
func rawSpectator(b *testing.B, host, token string, subscribe bool) net.Conn {
	nc, err := net.Dial("tcp", host)
	if err != nil {
		b.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	authz := ""
	if token != "" {
		authz = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(nc, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n%s\r\n",
		host, key, proto.Subprotocol, authz)
	br := bufio.NewReaderSize(nc, 16)
	readUntil(b, nc, br, `"type":"welcome"`)
	if subscribe {
		if _, err := nc.Write(maskedText(`{"type":"subscribe","id":"s1","board":"mem","top":10}`)); err != nil {
			b.Fatal(err)
		}
		readUntil(b, nc, br, `"type":"top"`)
	}
	return nc
}

// readUntil reads nc until what it read contains want.
func readUntil(b testing.TB, nc net.Conn, br *bufio.Reader, want string) {
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer nc.SetReadDeadline(time.Time{})
	var seen []byte
	for !bytes.Contains(seen, []byte(want)) {
		c, err := br.ReadByte()
		if err != nil {
			b.Fatalf("waiting for %s: %v (read %q)", want, err, seen)
		}
		seen = append(seen, c)
	}
}

// maskedText is s as one masked client text frame (payload under 126).
func maskedText(s string) []byte {
	f := []byte{0x81, 0x80 | byte(len(s)), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(f[2:], 0x01020304)
	for i := range len(s) {
		f = append(f, s[i]^f[2+i%4])
	}
	return f
}
