package proto

// MaxScore is the largest magnitude of a score on the wire: 2^53-1.
const MaxScore int64 = 1<<53 - 1

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
	if n > MaxScore {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
