package proto

import (
	"strconv"
	"strings"

	"github.com/wsgateway/wsgateway/rank"
)

// AppendAck appends a's JSON to b: the same bytes as Marshal(a), built
// without reflection or allocation, since an ack is the reply to nearly
// every request at ingest rates (encode_test.go compares the two). It is
// the one ack encoder: the hub's acks and the REST scores answers (Type
// empty, so no "type") are both written by it.
func AppendAck(b []byte, a *Ack) []byte {
	b = append(b, '{')
	if a.Type != "" {
		b = append(b, `"type":`...)
		b = AppendJSONString(b, a.Type)
		b = append(b, ',')
	}
	b = append(b, `"id":`...)
	b = AppendJSONString(b, a.ID)
	b = append(b, `,"board":`...)
	b = AppendJSONString(b, a.Board)
	b = append(b, `,"member":`...)
	b = AppendJSONString(b, a.Member)
	b = append(b, `,"score":`...)
	b = AppendScore(b, a.Score, a.Decimals)
	if a.Rank > 0 { // else a sharded board's ack without ranks (R24): neither field
		b = append(b, `,"rank":`...)
		b = strconv.AppendInt(b, a.Rank, 10)
		b = append(b, `,"prev_rank":`...)
		if a.PrevRank == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, *a.PrevRank, 10)
		}
	}
	b = append(b, `,"duplicate":`...)
	b = strconv.AppendBool(b, a.Duplicate)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, a.Seq, 10)
	if a.Period != 0 {
		b = append(b, `,"period":`...)
		b = strconv.AppendInt(b, a.Period, 10)
	}
	if a.Cohort != "" {
		b = append(b, `,"cohort":`...)
		b = AppendJSONString(b, a.Cohort)
	}
	if a.Tier != "" {
		b = append(b, `,"tier":`...)
		b = AppendJSONString(b, a.Tier)
	}
	if a.Capped {
		b = append(b, `,"capped":true,"applied":`...)
		b = strconv.AppendInt(b, a.Applied, 10)
	}
	if a.Region != "" {
		b = append(b, `,"region":`...)
		b = AppendJSONString(b, a.Region)
	}
	if a.RegionRank != 0 {
		b = append(b, `,"region_rank":`...)
		b = strconv.AppendInt(b, a.RegionRank, 10)
	}
	if a.Held {
		b = append(b, `,"held":true`...)
	}
	return append(b, '}')
}

// AppendJSONString appends s quoted as Marshal quotes it (the gateway's
// acks and error frames and the Go client's requests use it). Ids are
// plain ASCII, copied as they are; anything Marshal would escape (quotes,
// backslash, control bytes, non-ASCII) takes its path so the output stays
// identical. That path marshals a copy: handing s itself to Marshal would
// make it escape, and with it the *Ack of every AppendAck call (its
// PrevRank then costs an allocation per ack).
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			q, _ := Marshal(strings.Clone(s))
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendError appends e's JSON to b: the same bytes as Marshal(e),
// built without reflection, since error frames answer refused events at
// ingest rates (rate_limited, board_closed) and the hub writes them into
// its pooled reply buffers (encode_test.go compares the two).
func AppendError(b []byte, e *Error) []byte {
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, e.Type)
	if e.ID != "" {
		b = append(b, `,"id":`...)
		b = AppendJSONString(b, e.ID)
	}
	b = append(b, `,"code":`...)
	b = AppendJSONString(b, e.Code)
	b = append(b, `,"message":`...)
	b = AppendJSONString(b, e.Message)
	if e.RetryAfterMS != 0 {
		b = append(b, `,"retry_after_ms":`...)
		b = strconv.AppendInt(b, e.RetryAfterMS, 10)
	}
	b = appendClosed(b, &e.Closed)
	return append(b, '}')
}

// appendClosed appends the R30 fields of c that are set, each after a comma.
func appendClosed(b []byte, c *rank.Closed) []byte {
	if c.Reason != "" {
		b = append(b, `,"reason":`...)
		b = AppendJSONString(b, c.Reason)
	}
	for _, f := range [...]struct {
		key string
		v   int64
	}{{`,"starts_at":`, c.StartsAt}, {`,"final_at":`, c.FinalAt}, {`,"period":`, c.Period}, {`,"grace_end":`, c.GraceEnd}} {
		if f.v != 0 {
			b = append(b, f.key...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	return b
}
