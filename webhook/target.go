// Package webhook delivers the rank store's outbox (docs/webhooks.md, R28):
// it leases one due delivery at a time, POSTs it signed with the webhook's
// secret, and records the outcome, so the store schedules the retries and
// another node takes over a delivery whose node died. It also refuses
// targets that are not public unicast addresses (Refused), both when a
// webhook is stored (its name's addresses) and when it is dialled (the
// address actually connected to, which a name can change at any time).
// Any other outbound call the gateway makes to an address an admin names
// uses the same guard: Refused, Control, Dialer and CheckURL.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// special are the IANA special-purpose address registries' blocks (IPv4
// and IPv6, as of 2025), the IPv4 multicast, deprecated site-local and
// IPv4-compatible blocks, and what IPv6 has not allocated for global
// unicast: none is a place a webhook goes. A block the registries call
// globally reachable (AS112, AMT, NAT64's 64:ff9b::/96, 6to4) is refused
// too: the translating ones carry an IPv4 address inside that may be any
// of the others (64:ff9b::7f00:1 is 127.0.0.1 through a NAT64 gateway),
// and the rest are infrastructure, not receivers.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4 (RFC 6890 and its updates).
		"0.0.0.0/8",          // "this network"
		"10.0.0.0/8",         // private
		"100.64.0.0/10",      // shared address space (carrier-grade NAT)
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local (cloud metadata services)
		"172.16.0.0/12",      // private
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // TEST-NET-1
		"192.31.196.0/24",    // AS112-v4
		"192.52.193.0/24",    // AMT
		"192.88.99.0/24",     // deprecated 6to4 relay anycast
		"192.168.0.0/16",     // private
		"192.175.48.0/24",    // AS112 direct delegation
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // TEST-NET-2
		"203.0.113.0/24",     // TEST-NET-3
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved
		"255.255.255.255/32", // limited broadcast
		// IPv6.
		"::/96",             // unspecified, loopback and IPv4-compatible ::a.b.c.d
		"::ffff:0:0/96",     // IPv4-mapped (Refused unmaps them first)
		"64:ff9b::/96",      // IPv4/IPv6 translation (NAT64)
		"64:ff9b:1::/48",    // local-use translation
		"100::/64",          // discard-only
		"100:0:0:1::/64",    // dummy prefix
		"2001::/23",         // IETF protocol assignments (Teredo, benchmarking, ORCHID…)
		"2001:db8::/32",     // documentation
		"2002::/16",         // 6to4
		"2620:4f:8000::/48", // AS112 direct delegation
		"3fff::/20",         // documentation
		"5f00::/16",         // segment routing SIDs
		"fc00::/7",          // unique local
		"fe80::/10",         // link-local
		"fec0::/10",         // site-local (deprecated)
		"ff00::/8",          // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// globalUnicast6 is where IPv6 global unicast addresses are allocated;
// everything outside it is reserved or special.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Refused reports whether ip is a target a webhook may not reach without
// --webhook-allow-private: anything but a public unicast address, i.e. an
// address in an IANA special-purpose block (loopback, private, link-local,
// shared, documentation, benchmarking, reserved, broadcast, translation:
// see special), multicast, or outside IPv6's global unicast space. An
// IPv4-mapped address is judged as its IPv4 address.
func Refused(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || (ip.Is6() && !globalUnicast6.Contains(ip)) {
		return true
	}
	for _, p := range special {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// ErrRefusedTarget is a dial to an address Refused names.
var ErrRefusedTarget = errors.New("webhook: target address is not a public unicast address")

// Guard refuses the targets Refused names, and with Loopback lets the
// loopback ones through (a --dev gateway: on a developer's machine, where
// anyone may mint an admin token anyway, a receiver on localhost is the
// one a new user tries first). The zero Guard is the default policy.
type Guard struct {
	Loopback bool
}

// Refused reports whether g refuses ip (see the package's Refused).
func (g Guard) Refused(ip netip.Addr) bool {
	if g.Loopback && ip.Unmap().IsLoopback() {
		return false
	}
	return Refused(ip)
}

// Dialer is a net.Dialer with timeout whose Control refuses the addresses
// Refused names, whatever a name resolved to when it was checked: an
// outbound client to an address an admin chose dials through it (and
// through no proxy, which would dial for it, past Control).
func Dialer(timeout time.Duration) *net.Dialer { return Guard{}.Dialer(timeout) }

// Dialer is the package's Dialer under g.
func (g Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: g.Control}
}

// Control is a net.Dialer Control that refuses an address g.Refused names:
// it sees the address about to be connected to, after the name resolved.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	if ap, err := netip.ParseAddrPort(address); err != nil || g.Refused(ap.Addr()) {
		return fmt.Errorf("webhook: dial %s: %w", address, ErrRefusedTarget)
	}
	return nil
}

// Resolver looks up a host's addresses (net.DefaultResolver does).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL refuses a webhook URL whose host is, or resolves to, an address
// Refused names, as rank.ErrInvalidWebhook naming url. A name that does
// not resolve now is refused too: an admin sees the mistake at once.
func CheckURL(ctx context.Context, r Resolver, raw string) error {
	return Guard{}.CheckURL(ctx, r, raw)
}

// CheckURL is the package's CheckURL under g.
func (g Guard) CheckURL(ctx context.Context, r Resolver, raw string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: field url: %s (set --webhook-allow-private to allow it)", rank.ErrInvalidWebhook, fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: field url: %v", rank.ErrInvalidWebhook, err)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if g.Refused(ip) {
			return bad("%s is not a public unicast address (loopback, private, link-local or another special-purpose block)", host)
		}
		return nil
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); !g.Loopback && (h == "localhost" || strings.HasSuffix(h, ".localhost")) {
		return bad("%s is loopback", host)
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return fmt.Errorf("%w: field url: host %s does not resolve", rank.ErrInvalidWebhook, host)
		}
		return fmt.Errorf("webhook: resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if g.Refused(ip) {
			return bad("%s resolves to %s, not a public unicast address (loopback, private, link-local or another special-purpose block)", host, ip)
		}
	}
	return nil
}
