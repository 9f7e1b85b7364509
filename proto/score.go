package proto

import "github.com/wsgateway/wsgateway/rank"

// ParseScore reads a JSON integer strictly (R6): an optional minus sign and
// digits, no fraction, no exponent, no leading zeros, magnitude at most
// 2^53-1. Strings, null, 1.5, 1e3 and anything larger fail.
func ParseScore(raw []byte) (int64, bool) {
	s := raw
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	// 2^53-1 has 16 digits; more can only be out of range (or a leading zero).
	if len(s) == 0 || len(s) > 16 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > rank.MaxScore {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// ValidRequestID reports whether id is a legal request id (§4), which is also
// a score event's idempotency key (R4): ^[A-Za-z0-9_.:-]{1,64}$. A byte loop
// rather than a regexp, as it runs on every event.
func ValidRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
