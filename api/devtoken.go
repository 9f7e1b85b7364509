package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// Dev token limits.
const (
	maxName   = 32
	maxDevTTL = 365 * 24 * time.Hour
)

// devTokenRequest is the body of POST /api/v1/dev/token.
type devTokenRequest struct {
	Sub    string    `json:"sub"`
	Role   auth.Role `json:"role"`
	Name   string    `json:"name"`
	Boards []string  `json:"boards"` // absent: every board; [] : none
	TTL    string    `json:"ttl"`    // Go duration; "" : Config.DevTTL
}

type devTokenBody struct {
	Token string `json:"token"`
	Exp   int64  `json:"exp"` // unix seconds, as in the token
}

// devToken mints an HS256 token with the dev secret (--dev only). It is open
// to anyone on this machine by design, and to no one else: the client's
// address (the TCP peer, or the client a trusted proxy names) must be a
// loopback address, so a client that reaches a dev node listening beyond
// loopback gets nothing whatever Host it sends; and the request's Host (and
// Origin, when a browser sends one) must name a loopback address, so a page
// on another site whose name resolves to 127.0.0.1 (DNS rebinding) gets
// nothing either.
func (a *API) devToken(c *fiber.Ctx) error {
	client, _ := a.proxies.Client(c.Context().RemoteAddr().String(), peekAll(&c.Request().Header, fiber.HeaderXForwardedFor))
	if !client.IsLoopback() || !loopbackHost(string(c.Request().Host())) || !loopbackOrigin(c.Get(fiber.HeaderOrigin)) {
		return errf(proto.CodeForbidden, "dev tokens are served to loopback hosts only (http://localhost or 127.0.0.1)")
	}
	var req devTokenRequest
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return errf(proto.CodeBadRequest, "body: want {\"sub\":…,\"role\":…,\"name\":…,\"boards\":[…],\"ttl\":\"1h\"}: %v", err)
	}
	if !rank.ValidMemberID(req.Sub) {
		return errf(proto.CodeBadRequest, "sub: %q must match [A-Za-z0-9_.:@-]{1,64}", req.Sub)
	}
	if req.Role == "" {
		req.Role = auth.Player
	}
	if !req.Role.Valid() {
		return errf(proto.CodeBadRequest, "role: %q is not player, spectator, server or admin", req.Role)
	}
	if utf8.RuneCountInString(req.Name) > maxName {
		return errf(proto.CodeBadRequest, "name: at most %d characters", maxName)
	}
	for _, b := range req.Boards {
		if !rank.ValidBoardID(b) {
			return errf(proto.CodeBadRequest, "boards: %q must match [A-Za-z0-9_.-]{1,64}", b)
		}
	}
	ttl := a.cfg.DevTTL
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > maxDevTTL {
			return errf(proto.CodeBadRequest, "ttl: %q is not a duration within 0..%s", req.TTL, maxDevTTL)
		}
		ttl = d
	}
	tok, err := auth.MintHS256(a.cfg.DevSecret, auth.Claims{
		Sub: req.Sub, Role: req.Role, Boards: req.Boards, Name: req.Name, TTL: ttl,
	})
	if err != nil {
		return fmt.Errorf("api: mint dev token: %w", err)
	}
	exp, err := tokenExp(tok)
	if err != nil {
		return fmt.Errorf("api: mint dev token: %w", err)
	}
	return c.JSON(devTokenBody{Token: tok, Exp: exp})
}

// loopbackHost reports whether a Host header names this machine's loopback:
// localhost, 127.0.0.0/8 or ::1, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// loopbackOrigin accepts no Origin (a non-browser client) or one whose host
// is loopback.
func loopbackOrigin(origin string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && loopbackHost(u.Host)
}

// tokenExp reads `exp` back from a token we just minted, so the answer
// states exactly what the token says.
func tokenExp(tok string) (int64, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0, fmt.Errorf("minted token is not a JWS")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0, fmt.Errorf("minted token payload: %w", err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return 0, fmt.Errorf("minted token payload: %w", err)
	}
	return claims.Exp, nil
}
