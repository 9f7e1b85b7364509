package hub

import (
	"hash/maphash"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/clientaddr"
	"github.com/wsgateway/wsgateway/proto"
)

// Connection caps (Config.MaxConnsPerIP, Config.MaxConnsPerMember): an
// upgrade past a cap is refused before any WebSocket work with 429
// rate_limited and Retry-After.

// Defaults of the caps. 256 per address leaves room for a NAT (a campus, a
// mobile carrier) while one host cannot take a node's file descriptors; 16
// per member is many tabs and devices of one player.
const (
	DefaultMaxConnsPerIP     = 256
	DefaultMaxConnsPerMember = 16
)

// capRetryAfter is the Retry-After (seconds) of a refused upgrade: a slot
// frees only when one of the holder's own connections ends, so retrying at
// once is pointless.
const capRetryAfter = 5

// slotKind selects which per-key count of the registry a slot is taken in.
type slotKind int

const (
	slotIP slotKind = iota
	slotMember
	slotKinds
)

// acquire takes a slot for key unless key already holds max of them.
// Counts live in the shard of the key's hash, so connects of different keys
// rarely share a lock and no lock is global.
func (r *registry) acquire(kind slotKind, key string, max int) bool {
	s := r.keyShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.slots[kind]
	if m[key] >= max {
		return false
	}
	m[key]++
	return true
}

// release gives back a slot taken by acquire; a key with no slot left is
// deleted so the maps hold only keys with open connections.
func (r *registry) release(kind slotKind, key string) {
	s := r.keyShard(key)
	s.mu.Lock()
	m := s.slots[kind]
	if m[key] <= 1 {
		delete(m, key)
	} else {
		m[key]--
	}
	s.mu.Unlock()
}

func (r *registry) keyShard(key string) *regShard {
	return &r.shards[maphash.String(r.seed, key)%uint64(len(r.shards))]
}

// reservation is the slots one upgrade holds: its address's, taken before
// the token is verified (the cheapest refusal), then, once the token is
// known, its member's. release gives back whatever was taken, when the
// upgrade is refused or the connection ends.
type reservation struct {
	h     *Hub
	ipKey string // "" = not counted
	mKey  string
	node  bool // holds a MaxConns slot
	// sock is the socket once upgraded (a *sock.Conn): a flood close holds
	// the slots (holdAfterFlood).
	sock interface{ Flooded() bool }
}

func (rv *reservation) release() {
	if rv.node {
		rv.h.nodeConns.Add(-1)
	}
	if rv.holdAfterFlood() {
		return
	}
	rv.releaseSlots()
}

// releaseSlots gives back the address and member slots.
func (rv *reservation) releaseSlots() {
	if rv.ipKey != "" {
		rv.h.reg.release(slotIP, rv.ipKey)
	}
	if rv.mKey != "" {
		rv.h.reg.release(slotMember, rv.mKey)
	}
}

// reserveNode takes one of the node's MaxConns slots; false means the
// node is full. It is the first check of an upgrade: the cheapest refusal.
func (h *Hub) reserveNode(rv *reservation) bool {
	if h.cfg.MaxConns <= 0 {
		return true
	}
	if h.nodeConns.Add(1) > int64(h.cfg.MaxConns) {
		h.nodeConns.Add(-1)
		h.m.refused("node")
		h.log.Debug("hub: upgrade refused: connections per node", "max", h.cfg.MaxConns)
		return false
	}
	rv.node = true
	return true
}

// nodeFull answers an upgrade refused by reserveNode: 503, so that a load
// balancer tries another node.
func nodeFull(w http.ResponseWriter, max int) {
	w.Header().Set("Retry-After", strconv.Itoa(capRetryAfter))
	httpError(w, http.StatusServiceUnavailable, proto.CodeUnavailable,
		"this node holds its most connections ("+strconv.Itoa(max)+")")
}

// reserveIP takes the address slot of r's client; false means the cap is
// reached. Loopback clients and unknown addresses are not counted; a
// trusted proxy's unparseable X-Forwarded-For hop is (clientKey).
func (h *Hub) reserveIP(rv *reservation, r *http.Request) bool {
	if h.cfg.MaxConnsPerIP < 0 {
		return true
	}
	key := h.clientKey(r)
	if key == "" {
		return true
	}
	if !h.reg.acquire(slotIP, key, h.cfg.MaxConnsPerIP) {
		h.m.refused("ip")
		h.log.Debug("hub: upgrade refused: connections per address", "addr", key, "max", h.cfg.MaxConnsPerIP)
		return false
	}
	rv.ipKey = key
	return true
}

// reserveMember takes the member slot of a player or spectator; server and
// admin tokens are exempt (one bot multiplexes many connections), and so is
// an anonymous spectator (its member id is random; the address cap bounds
// it).
func (h *Hub) reserveMember(rv *reservation, p auth.Principal, anon bool) bool {
	if h.cfg.MaxConnsPerMember < 0 || anon || !p.Limited() {
		return true
	}
	if !h.reg.acquire(slotMember, p.Member, h.cfg.MaxConnsPerMember) {
		h.m.refused("member")
		h.log.Debug("hub: upgrade refused: connections per member", "member", p.Member, "max", h.cfg.MaxConnsPerMember)
		return false
	}
	rv.mKey = p.Member
	return true
}

func capRefused(w http.ResponseWriter, what string, max int) {
	w.Header().Set("Retry-After", strconv.Itoa(capRetryAfter))
	httpError(w, http.StatusTooManyRequests, proto.CodeRateLimited,
		"too many connections "+what+" (at most "+strconv.Itoa(max)+")")
}

// clientKey is the count key of r's client: the TCP peer, or, when the
// peer is one of TrustedProxies, the right-most X-Forwarded-For hop that
// is not itself trusted (hops left of it were written by the client and
// can be forged); clientaddr.Proxies.Key.
func (h *Hub) clientKey(r *http.Request) string {
	return clientaddr.Proxies(h.cfg.TrustedProxies).Key(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
}

// ExposureWarning is the start-up warning for a hub served on listenAddr
// ("" when there is nothing to say): listening beyond loopback while
// loopback clients are exempt from MaxConnsPerIP and no proxy is trusted
// means a proxy on the same host (nginx, HAProxy, a sidecar) makes every
// client a loopback client, with no per-address cap at all.
func (h *Hub) ExposureWarning(listenAddr string) string {
	if h.cfg.MaxConnsPerIP < 0 || len(h.cfg.TrustedProxies) > 0 {
		return ""
	}
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		host = listenAddr
	}
	if host == "localhost" {
		return ""
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
		return ""
	}
	return "hub: listening on " + listenAddr + " beyond loopback with no --trusted-proxies: loopback clients are not counted by --max-conns-per-ip, so a reverse proxy on this host lifts the cap for every client; set --trusted-proxies to the proxy's address"
}

// floodHold is how long a connection closed for flooding (sock.Conn's
// frame budget) keeps its address and member slots (Config.MaxConnsPerIP,
// MaxConnsPerMember) after it ends. A flooder that dials again at once gets
// a fresh budget per connection, so the caps bound its connections at once
// but not per second; held, the slots bound it to MaxConnsPerMember
// connections per floodHold per member, and MaxConnsPerIP per address. A
// real client never floods, so it never waits.
const floodHold = 10 * time.Second

// holdAfterFlood reports whether rv's connection was closed for flooding;
// if so, its address and member slots are given back after floodHold
// instead of now.
func (rv *reservation) holdAfterFlood() bool {
	if rv.sock == nil || !rv.sock.Flooded() || (rv.ipKey == "" && rv.mKey == "") {
		return false
	}
	time.AfterFunc(floodHold, rv.releaseSlots)
	return true
}
