// Package webhook delivers the rank store's outbox (docs/webhooks.md, R28):
// it leases one due delivery at a time, POSTs it signed with the webhook's
// secret, and records the outcome, so the store schedules the retries and
// another node takes over a delivery whose node died. It also refuses
// targets on loopback, private and link-local addresses, both when a
// webhook is stored (its name's addresses) and when it is dialled (the
// address actually connected to, which a name can change at any time).
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

	"github.com/wsgateway/wsgateway/rank"
)

// cgnat is the shared address space of RFC 6598: not public either.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Refused reports whether ip is a target a webhook may not reach without
// --webhook-allow-private: loopback, private, link-local, unspecified or
// multicast.
func Refused(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || cgnat.Contains(ip)
}

// ErrRefusedTarget is a dial to an address Refused names.
var ErrRefusedTarget = errors.New("webhook: target address is loopback, private or link-local")

// Control is a net.Dialer Control that refuses an address Refused names:
// it sees the address about to be connected to, after the name resolved.
func Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dial %s: %w", address, ErrRefusedTarget)
	}
	if Refused(ap.Addr()) {
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
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: field url: %s (set --webhook-allow-private to allow it)", rank.ErrInvalidWebhook, fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: field url: %v", rank.ErrInvalidWebhook, err)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if Refused(ip) {
			return bad("%s is a loopback, private or link-local address", host)
		}
		return nil
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
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
		if Refused(ip) {
			return bad("%s resolves to %s, a loopback, private or link-local address", host, ip)
		}
	}
	return nil
}
