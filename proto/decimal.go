package proto

import (
	"bytes"
	"strconv"
)

// Scores with decimals (hot boards, PROTOCOL.md R22): the store hands out
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
// number with d decimals, in place when it can. Keys are found outside
// strings only, so no name or id can fake one; null stays null. d ≤ 0
// returns js unchanged. Frames are encoded once per board and shared, so
// this runs once per frame, not per subscriber.
func Decimalize(js []byte, d int) []byte {
	if d <= 0 || !bytes.Contains(js, []byte(`"score"`)) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	for i := 0; i < len(js); {
		c := js[i]
		if c != '"' {
			out = append(out, c)
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
		for k < len(js) && js[k] >= '0' && js[k] <= '9' {
			k++
		}
		if k == j || (k < len(js) && (js[k] == '.' || js[k] == 'e' || js[k] == 'E')) {
			continue // null, or not an integer: left as it is
		}
		v, err := strconv.ParseInt(string(js[j:k]), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, js[i:j]...)
		out = AppendScore(out, v, d)
		i = k
	}
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
	out := make([]byte, 0, len(js))
	found := 0
	for i := 0; i < len(js); {
		c := js[i]
		if c != '"' {
			out = append(out, c)
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
		for k < len(js) && js[k] >= '0' && js[k] <= '9' {
			k++
		}
		if k == j || k >= len(js) || js[k] != '.' {
			continue
		}
		f := k + 1
		for f < len(js) && js[f] >= '0' && js[f] <= '9' {
			f++
		}
		digits := js[k+1 : f]
		if len(digits) > d {
			continue
		}
		n := append([]byte{}, js[j:k]...)
		n = append(n, digits...)
		for range d - len(digits) {
			n = append(n, '0')
		}
		v, err := strconv.ParseInt(string(n), 10, 64) // "-0005" is -5
		if err != nil {
			continue
		}
		out = append(out, js[i:j]...)
		out = strconv.AppendInt(out, v, 10)
		i = f
		found = d
	}
	return out, found
}

// FormatScore is v, in units of 10^-d, as AppendScore writes it.
func FormatScore(v int64, d int) string { return string(AppendScore(nil, v, d)) }
