package integrity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/webhook"
)

// EventValidate is the X-LB-Event of a hook call.
const EventValidate = "score.validate"

// maxAnswer bounds the hook's answer read: a verdict and a reason.
const maxAnswer = 4 << 10

type verdict uint8

const (
	verdictAccept verdict = iota
	verdictReject
	verdictFlag
)

// Request is a hook call's body (§16): the event and the member's entry as
// it is now (Score and Rank nil when it has none).
type Request struct {
	Board  string          `json:"board"`
	Period int64           `json:"period"`
	Member string          `json:"member"`
	ID     string          `json:"id"`
	Delta  *int64          `json:"delta,omitempty"`
	Value  *int64          `json:"value,omitempty"`
	Meta   json.RawMessage `json:"meta"`
	Score  *int64          `json:"score"`
	Rank   *int64          `json:"rank"`
}

// RequestOf is the body of the call for e, claimed with ve.
func RequestOf(e rank.Event, ve *rank.ValidateError) Request {
	r := Request{Board: e.Board, Period: ve.Period, Member: e.Member, ID: e.ID, Meta: json.RawMessage("null")}
	n := e.Amount
	if e.Op == rank.OpDelta {
		r.Delta = &n
	} else {
		r.Value = &n
	}
	if e.Meta != "" {
		r.Meta = json.RawMessage(e.Meta)
	}
	if ve.Found {
		score, rk := ve.Score, ve.Rank
		r.Score, r.Rank = &score, &rk
	}
	return r
}

// DeliveryID is the X-LB-Delivery of the call for an event: the same for
// every call of one (board, member, id), so a hook that saw a call from a
// node that then died can tell the next one is the same event.
func DeliveryID(board, member, id string) string {
	h := sha256.Sum256([]byte(board + "\x00" + member + "\x00" + id))
	return "v-" + hex.EncodeToString(h[:12])
}

// answer is the hook's reply.
type answer struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// call POSTs e's validation to board b's hook and returns its verdict and
// reason; an error is any other answer, or none within the board's
// timeout.
func (s *Store) call(ctx context.Context, b rank.Board, e rank.Event, ve *rank.ValidateError) (verdict, string, error) {
	body, _ := json.Marshal(RequestOf(e, ve)) // plain types and a valid meta
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(b.Hook.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.Hook.URL, bytes.NewReader(body))
	if err != nil {
		s.m.verdicts.WithLabelValues("error").Inc()
		return 0, "", fmt.Errorf("bad url: %w", err)
	}
	ts := s.cfg.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "wsgateway-validate")
	req.Header.Set("X-LB-Event", EventValidate)
	req.Header.Set("X-LB-Delivery", DeliveryID(e.Board, e.Member, e.ID))
	req.Header.Set("X-LB-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-LB-Signature", webhook.Sign(b.Hook.Secret, ts, body))
	began := time.Now()
	v, reason, err := s.do(req)
	s.m.latency.Observe(time.Since(began).Seconds())
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.m.verdicts.WithLabelValues("timeout").Inc()
		return 0, "", fmt.Errorf("no answer within %s", time.Duration(b.Hook.Timeout))
	case err != nil:
		s.m.verdicts.WithLabelValues("error").Inc()
		return 0, "", err
	}
	s.m.verdicts.WithLabelValues([...]string{"accept", "reject", "flag"}[v]).Inc()
	return v, reason, nil
}

// do sends req and reads the verdict.
func (s *Store) do(req *http.Request) (verdict, string, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return 0, "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode != http.StatusOK {
		return 0, "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if len(raw) > maxAnswer {
		return 0, "", fmt.Errorf("answer longer than %d bytes", maxAnswer)
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, "", fmt.Errorf("answer is not a verdict object: %w", err)
	}
	switch a.Verdict {
	case "accept":
		return verdictAccept, "", nil
	case "reject":
		return verdictReject, rank.CheckReason(a.Reason), nil
	case "flag":
		return verdictFlag, rank.CheckReason(a.Reason), nil
	}
	return 0, "", fmt.Errorf("verdict %q is not accept, reject or flag", rank.CheckReason(a.Verdict))
}
