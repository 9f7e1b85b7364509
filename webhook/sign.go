package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Sign is the X-LB-Signature of body sent at unix second ts (§13):
// "sha256=" and the hex HMAC-SHA256 of secret over ts "." body.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify is a receiver's check of a signature (docs/webhooks.md), in
// constant time.
func Verify(secret, ts string, body []byte, signature string) bool {
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(Sign(secret, t, body)), []byte(signature))
}
