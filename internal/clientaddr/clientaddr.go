// Package clientaddr finds the client address of an HTTP request behind
// trusted reverse proxies (--trusted-proxies), the key of every
// per-address limit: the WebSocket's connection caps and REST's rate and
// body-slot limits call the same function, so a proxy is trusted alike
// for both.
package clientaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Proxies are the trusted proxies' prefixes, masked and unmapped
// (Normalize) so that Contains matches ParseHop's addresses.
type Proxies []netip.Prefix

// Normalize masks and unmaps ps.
func Normalize(ps []netip.Prefix) Proxies {
	out := make(Proxies, 0, len(ps))
	for _, p := range ps {
		a := p.Addr()
		bits := p.Bits()
		if a.Is4In6() {
			a = a.Unmap()
			bits = max(bits-96, 0)
		}
		out = append(out, netip.PrefixFrom(a, bits).Masked())
	}
	return out
}

// Parse parses a comma-separated list of CIDRs or bare addresses (a bare
// address is its own /32 or /128).
func Parse(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("clientaddr: trusted proxy %q: %w", f, err)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("clientaddr: trusted proxy %q: %w", f, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Trusts reports whether a is one of the proxies.
func (ps Proxies) Trusts(a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Client is the client address of a request from peer (the TCP peer,
// "ip:port") carrying the X-Forwarded-For lines xff: the peer, or, when
// the peer is a trusted proxy, the right-most hop that is not itself
// trusted (hops left of it were written by the client and can be forged).
// garbled reports that an unparseable hop cut the walk short: the address
// is then the last trusted hop, a proxy. The zero Addr means unknown.
func (ps Proxies) Client(peer string, xff []string) (a netip.Addr, garbled bool) {
	p := ParseHop(peer)
	if !p.IsValid() || !ps.Trusts(p) {
		return p, false
	}
	client := p
	for i := len(xff) - 1; i >= 0; i-- {
		hops := strings.Split(xff[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a := ParseHop(hops[j])
			if !a.IsValid() {
				// Garbage: believe nothing further left; the last
				// trusted hop stands for the client.
				return client, true
			}
			client = a
			if !ps.Trusts(a) {
				return a, false
			}
		}
	}
	return client, false // every hop trusted: the left-most one
}

// Key is the connection caps' key of a request (Client, then AddrKey).
// A trusted proxy that forwards an unparseable hop ("unknown", garbage)
// has that client keyed "via <proxy>", even when the proxy is on
// loopback: otherwise every such client would fall back to the exempt
// proxy address.
func (ps Proxies) Key(peer string, xff []string) string {
	a, garbled := ps.Client(peer, xff)
	if garbled {
		return "via " + a.String()
	}
	return AddrKey(a)
}

// ParseHop parses "ip", "ip:port" or "[ipv6]:port" (proxies write both).
func ParseHop(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}

// AddrKey is the key of a client address: IPv4 as is, IPv6 by its /64
// (one host owns a whole /64). "" = not counted: unknown, or loopback
// (the host itself: a local proxy without trusted proxies, a load test).
func AddrKey(a netip.Addr) string {
	switch {
	case !a.IsValid(), a.IsLoopback():
		return ""
	case a.Is6():
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}
