package proto

import (
	"bytes"
	"strconv"
)

// Scores with decimals (hot boards, docs/protocol.md R22): the store hands out
// int64 scores in units of 10^-d; the wire prints them as JSON numbers with
// exactly d decimals (12345 with d = 3 is 12.345, -5 is -0.005, 7000 is
// 7.000), so a reader can tell a decimal board from its scores alone.

// AppendScore appends v, in units of 10^-d, as a JSON number with d
// decimals (d = 0: a plain integer).
func AppendScore(b []byte, v int64, d int) []byte {
	if d <= 0 {
		return strconv.AppendInt(b, v, 10)
	}
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = uint64(-v)
	}
	p := uint64(1)
	for range d {
		p *= 10
	}
	b = strconv.AppendUint(b, u/p, 10)
	b = append(b, '.')
	frac := strconv.AppendUint(nil, u%p+p, 10) // leading 1, then d digits
	return append(b, frac[1:]...)
}

// Decimalize rewrites every "score" member of the JSON in js (an encoded
// frame or body, any nesting) from an integer in units of 10^-d to the
// number with d decimals. Keys are found outside strings only, so no name
// or id can fake one; null stays null. d ≤ 0 returns js unchanged. Frames
// are encoded once per board and shared, so this runs once per frame, not
// per subscriber.
func Decimalize(js []byte, d int) []byte {
	if d <= 0 || !bytes.Contains(js, []byte(`"score"`)) {
		return js
	}
	out, _ := rewriteScores(js, func(out, num []byte) ([]byte, bool) {
		if bytes.ContainsAny(num, ".eE") {
			return out, false // not an integer: left as it is
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return out, false
		}
		return AppendScore(out, v, d), true
	})
	return out
}

// Undecimalize is Decimalize's inverse for readers that hold scores as
// int64 (the Go client): every "score" number with a fraction of at most
// d digits becomes the integer in units of 10^-d. It reports the decimals
// it found: d when any score had a fraction, else 0 (js returned as is).
func Undecimalize(js []byte, d int) ([]byte, int) {
	if d <= 0 || !bytes.Contains(js, []byte(`"score"`)) || !bytes.Contains(js, []byte(".")) {
		return js, 0
	}
	out, n := rewriteScores(js, func(out, num []byte) ([]byte, bool) {
		whole, digits, ok := bytes.Cut(num, []byte("."))
		if !ok || len(digits) > d || bytes.ContainsAny(digits, "eE-.") {
			return out, false
		}
		n := append(append([]byte{}, whole...), digits...)
		for range d - len(digits) {
			n = append(n, '0')
		}
		v, err := strconv.ParseInt(string(n), 10, 64) // "-0005" is -5
		if err != nil {
			return out, false
		}
		return strconv.AppendInt(out, v, 10), true
	})
	if n == 0 {
		return out, 0
	}
	return out, d
}

// rewriteScores copies js, handing the number after every "score" key
// found outside strings to f, which appends its replacement to out (ok)
// or declines (the number is kept as it was). It reports how many f
// replaced.
func rewriteScores(js []byte, f func(out, num []byte) ([]byte, bool)) ([]byte, int) {
	out := make([]byte, 0, len(js)+16)
	found := 0
	for i := 0; i < len(js); {
		if js[i] != '"' {
			out = append(out, js[i])
			i++
			continue
		}
		end := stringEnd(js, i)
		str := js[i:end]
		out = append(out, str...)
		i = end
		if string(str) != `"score"` {
			continue
		}
		j := i
		for j < len(js) && (js[j] == ' ' || js[j] == ':') {
			j++
		}
		k := j
		if k < len(js) && js[k] == '-' {
			k++
		}
		for k < len(js) && (js[k] >= '0' && js[k] <= '9' || js[k] == '.' || js[k] == 'e' || js[k] == 'E' || js[k] == '+' || js[k] == '-') {
			k++
		}
		if k == j || js[j] == '-' && k == j+1 {
			continue // null or no number: left as it is
		}
		n := len(out)
		out = append(out, js[i:j]...)
		if r, ok := f(out, js[j:k]); ok {
			out, i = r, k
			found++
			continue
		}
		out = out[:n]
	}
	return out, found
}

// FormatScore is v, in units of 10^-d, as AppendScore writes it.
func FormatScore(v int64, d int) string { return string(AppendScore(nil, v, d)) }
