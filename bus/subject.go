package bus

import (
	"strings"
)

// Board ids may contain ".", which would split a NATS subject token, so a
// board becomes a token by percent-encoding every byte outside
// [A-Za-z0-9_-] ("%" included, so decoding is exact). A valid board id
// without dots is its own token.

const hexDigits = "0123456789ABCDEF"

func tokenSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// encodeToken maps a board id to one subject token.
func encodeToken(board string) string {
	n := 0
	for i := 0; i < len(board); i++ {
		if !tokenSafe(board[i]) {
			n++
		}
	}
	if n == 0 {
		return board
	}
	var sb strings.Builder
	sb.Grow(len(board) + 2*n)
	for i := 0; i < len(board); i++ {
		c := board[i]
		if tokenSafe(c) {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&15])
	}
	return sb.String()
}

// decodeToken inverts encodeToken; ok is false for a token encodeToken
// cannot have produced.
func decodeToken(tok string) (board string, ok bool) {
	if !strings.Contains(tok, "%") {
		for i := 0; i < len(tok); i++ {
			if !tokenSafe(tok[i]) {
				return "", false
			}
		}
		return tok, true
	}
	var sb strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case tokenSafe(c):
			sb.WriteByte(c)
		case c == '%' && i+2 < len(tok):
			hi, lo := unhex(tok[i+1]), unhex(tok[i+2])
			d := byte(hi<<4 | lo)
			if hi < 0 || lo < 0 || tokenSafe(d) {
				return "", false
			}
			sb.WriteByte(d)
			i += 2
		default:
			return "", false
		}
	}
	return sb.String(), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
