package proto

import (
	"errors"
	"strings"
)

// PublicMessage is the message a client reads for err, in the contract's
// words: the text from the coded error (a rank, auth or api sentinel) on,
// without the wrapping chain before it ("api: apply b: redisstore: …",
// which names packages and the engine). Codes whose detail is about the
// gateway's insides, not the request, get a fixed text: token_expired,
// unavailable (addresses of Redis or NATS) and internal. An unauthorized
// error says its fault (auth's sentinels: "malformed token", "bad
// signature", …, R30) without the detail after it, which is the JWT
// library's. The full error belongs in the log.
func PublicMessage(err error) string {
	var c interface {
		Code() string
		Error() string
	}
	if !errors.As(err, &c) {
		return "internal error"
	}
	switch c.Code() {
	case CodeInternal:
		return "internal error"
	case CodeUnauthorized:
		return c.Error()
	case CodeTokenExpired:
		return "token expired"
	case CodeUnavailable:
		return "service unavailable, retry later"
	}
	full, own := err.Error(), c.Error()
	if i := strings.Index(full, own); i >= 0 {
		return full[i:]
	}
	return own
}
