package auth

import (
	"net/http"
	"strings"
)

// Carrier names where TokenFromRequest found the token.
type Carrier int

const (
	// CarrierNone means the request carries no token; it is the zero value.
	CarrierNone Carrier = iota
	// CarrierSubprotocol is `Sec-WebSocket-Protocol: lb.v1, bearer.<jwt>`
	// (browsers, which cannot set headers on a WebSocket).
	CarrierSubprotocol
	// CarrierHeader is `Authorization: Bearer <jwt>`.
	CarrierHeader
	// CarrierQuery is the `access_token` query parameter; such URLs must never
	// be logged.
	CarrierQuery
)

func (c Carrier) String() string {
	switch c {
	case CarrierSubprotocol:
		return "subprotocol"
	case CarrierHeader:
		return "header"
	case CarrierQuery:
		return "query"
	}
	return "none"
}

// Duplicated from proto (auth imports nothing from the project).
const (
	subprotocol  = "lb.v1"
	bearerPrefix = "bearer."
	queryParam   = "access_token"
)

// TokenFromRequest extracts the token from an upgrade or REST request, first
// found wins (docs/protocol.md §3): the subprotocol list, then the Authorization
// header, then the access_token query parameter. It does not verify the token.
//
// A `bearer.` subprotocol counts only when `lb.v1` is offered beside it: a
// client that did not ask for lb.v1 cannot complete the handshake anyway, and
// ignoring the entry means the failure reads "missing token" rather than a
// puzzling subprotocol error after a successful verification.
func TokenFromRequest(r *http.Request) (token string, c Carrier) {
	if tok, ok := fromSubprotocols(r.Header.Values("Sec-WebSocket-Protocol")); ok {
		return tok, CarrierSubprotocol
	}
	if tok, ok := BearerToken(r.Header.Get("Authorization")); ok {
		return tok, CarrierHeader
	}
	if r.URL != nil {
		if tok := strings.TrimSpace(r.URL.Query().Get(queryParam)); tok != "" {
			return tok, CarrierQuery
		}
	}
	return "", CarrierNone
}

// fromSubprotocols scans every Sec-WebSocket-Protocol header line, each a
// comma-separated list, for the first non-empty `bearer.<jwt>` entry.
func fromSubprotocols(lines []string) (string, bool) {
	var tok string
	offered := false
	for _, line := range lines {
		for item := range strings.SplitSeq(line, ",") {
			item = strings.TrimSpace(item)
			switch {
			case item == subprotocol:
				offered = true
			case tok == "" && strings.HasPrefix(item, bearerPrefix) && isToken(item):
				tok = item[len(bearerPrefix):]
			}
		}
	}
	return tok, offered && tok != ""
}

// isToken reports whether s is an RFC 9110 token, as every subprotocol must
// be; a JWT always is, and anything else is not a bearer entry.
func isToken(s string) bool {
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// BearerToken parses an Authorization header value `Bearer <jwt>`; the
// scheme is case-insensitive (RFC 9110 §11.1). REST requests use it alone.
func BearerToken(h string) (string, bool) {
	scheme, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok := strings.TrimSpace(rest)
	return tok, tok != ""
}
