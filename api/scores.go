package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// scoreItem is one decoded element of a scores array: an event ready for
// the store, or the error that element is answered with.
type scoreItem struct {
	id  string
	ev  rank.Event
	err error
}

// scores is POST /api/v1/boards/{board}/scores: every element is answered,
// in order, with an ack or its own error; only a malformed or oversized
// array fails the whole request (and then nothing is applied). Elements are
// applied in array order (applyAll), so a repeated id sees its earlier twin.
func (a *API) scores(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	if p := principal(c); p.Role != auth.Server && p.Role != auth.Admin {
		return errf(proto.CodeForbidden, "role %s may not post scores over REST; use a server or admin token", p.Role)
	}
	body := bytes.TrimSpace(requestBody(c))
	if len(body) > 0 && body[0] == '{' {
		// One event object instead of an array (our addition): the answer is
		// its ack, or its error with that error's status (409 for a conflict).
		b, err := a.board(id)
		if err != nil {
			return err
		}
		it := decodeScore(b, body)
		if it.err != nil {
			return it.err
		}
		res, err := a.apply(it.ev)
		if err != nil {
			return err
		}
		return sendJSON(c, appendAck(nil, it.id, res))
	}
	raws, err := splitArray(body)
	if err != nil {
		return err
	}
	b, err := a.board(id)
	if err != nil {
		return err
	}
	items := make([]scoreItem, len(raws))
	for i, raw := range raws {
		items[i] = decodeScore(b, raw)
	}
	a.warmRegions(b, items) // regions.go
	results := a.applyAll(items, b.Validated())
	// Acks are appended with the WebSocket path's encoder; an ack is
	// about 120 bytes.
	out := make([]byte, 0, 2+128*len(results))
	out = append(out, '[')
	for i, r := range results {
		if i > 0 {
			out = append(out, ',')
		}
		if r.err != nil {
			out = appendFailure(out, proto.ScoreFailure{ID: items[i].id, Error: a.detail(r.err)})
			continue
		}
		out = appendAck(out, items[i].id, r.res)
	}
	return sendJSON(c, append(out, ']'))
}

// board is the config of board id, for checking events against it.
func (a *API) board(id string) (rank.Board, error) {
	b, err := a.deps.Store.Board(a.ctx(), id)
	if err != nil {
		return rank.Board{}, fmt.Errorf("api: scores %s: %w", id, err)
	}
	return b, nil
}

// requestBody is the request's body as fiber's c.Body() gives it, without
// the copy that c.Body() makes (the app is Immutable) and its walk over
// every header looking for Content-Encoding, which were a tenth of a
// one-event POST's allocations: the handlers that use it read the body
// within the request and keep no part of it (decoded strings are copies).
// A request with a Content-Encoding still goes through c.Body(), which
// decodes it.
func requestBody(c *fiber.Ctx) []byte {
	if len(c.Request().Header.Peek(fiber.HeaderContentEncoding)) > 0 {
		return c.Body()
	}
	return c.Request().Body()
}

// sendJSON answers with body, JSON already encoded (as c.JSON would).
func sendJSON(c *fiber.Ctx, body []byte) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

// applied is the outcome of one array element.
type applied struct {
	res rank.Result
	err error
}

// applyAll applies the valid items in order and returns every item's
// outcome (a decoding error stays the item's). The events go to the store
// arrayWindow at a time (on Redis they share pipelines with the WebSocket
// connections' scores), so a repeated id sees its earlier twin. Once the
// store is unreachable the elements after the one that met it are not
// tried: the first unavailable answer cancels the array's ctx, so no later
// element is sent (the store drops a call whose ctx ended) and each of them
// is answered with that first failure. The failures are a suffix, so
// re-sending the whole array applies everything in array order. An event
// another submission is validating (§16) is answered unavailable alone:
// the store answered. On a board with a hook (validated), an element
// waits until the array's earlier element of its member is answered,
// since a verdict may come long after later elements were applied.
func (a *API) applyAll(items []scoreItem, validated bool) []applied {
	out := make([]applied, len(items))
	ctx, stop := context.WithCancel(a.ctx())
	defer stop()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // guards down
		down error      // the first unavailable answer
	)
	// One submitter per request: the store applies its events in array
	// order, and other requests' events may overtake them.
	sub := a.submitters.Add(1)
	slots := make(chan struct{}, arrayWindow)
	var last map[string]chan struct{} // by member: its latest element's answer (validated)
	if validated {
		last = map[string]chan struct{}{}
	}
	for i, it := range items {
		if it.err != nil {
			out[i].err = it.err
			continue
		}
		var answered chan struct{}
		if validated {
			if prev := last[it.ev.Member]; prev != nil {
				<-prev
			}
			answered = make(chan struct{})
			last[it.ev.Member] = answered
		}
		slots <- struct{}{}
		if ctx.Err() != nil { // stopped by an earlier element: not tried
			<-slots
			if answered != nil {
				close(answered)
			}
			mu.Lock()
			why := down
			mu.Unlock()
			if why == nil {
				why = ctx.Err() // the request's deadline passed
			}
			out[i].err = fmt.Errorf("api: apply %s: %w", it.ev.Board, why)
			continue
		}
		wg.Add(1)
		ev := it.ev
		ev.Submitter = sub
		a.deps.Store.Apply(ctx, ev, func(r rank.Result, err error) {
			defer func() {
				if answered != nil {
					close(answered)
				}
				<-slots
				wg.Done()
			}()
			if err == nil {
				out[i].res = r
				a.count(r)
				return
			}
			var pe *rank.PendingError
			mu.Lock()
			if down == nil && proto.CodeOf(err) == proto.CodeUnavailable && !errors.As(err, &pe) {
				down = err
				stop()
			}
			if down != nil && errors.Is(err, context.Canceled) {
				err = down // not sent because of the first failure
			}
			mu.Unlock()
			out[i].err = fmt.Errorf("api: apply %s: %w", it.ev.Board, err)
		})
	}
	wg.Wait()
	return out
}

// arrayWindow bounds the events of one scores array in the store at a
// time, as a WebSocket connection's window does for its scores.
const arrayWindow = 64

// apply runs one event with its own deadline.
func (a *API) apply(ev rank.Event) (rank.Result, error) {
	res, err := rank.ApplyWait(a.ctx(), a.deps.Store, ev)
	if err != nil {
		return res, fmt.Errorf("api: apply %s: %w", ev.Board, err)
	}
	a.count(res)
	return res, nil
}

// count counts an applied event; a duplicate changed nothing. The store's
// sink, not the API, tells live frames and the bus.
func (a *API) count(res rank.Result) {
	if !res.Duplicate {
		a.m.applied.Inc()
	}
}

// appendAck appends the REST ack of r (the ack of §4 without type) with
// proto.AppendAck, the encoder the WebSocket path uses.
func appendAck(b []byte, id string, r rank.Result) []byte {
	a := proto.AckOf(id, r)
	return proto.AppendAck(b, &a)
}

// appendFailure appends a failed element's answer. Failures are the rare
// case and carry free text, so encoding/json writes them (proto.Marshal).
func appendFailure(b []byte, f proto.ScoreFailure) []byte {
	j, _ := proto.Marshal(f) // plain strings: Marshal cannot fail
	return append(b, j...)
}

// splitArray reads the body as a JSON array of at most MaxScores values,
// without decoding more than MaxScores+1 of them (a 1 MiB body could hold
// hundreds of thousands of tiny elements).
func splitArray(body []byte) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errf(proto.CodeBadRequest, "the body must be a JSON array of score events")
	}
	var out []json.RawMessage
	for dec.More() {
		if len(out) == MaxScores {
			return nil, tooLarge("at most %d score events per request", MaxScores)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, errf(proto.CodeBadRequest, "malformed JSON array: %v", err)
		}
		out = append(out, raw)
	}
	if _, err := dec.Token(); err != nil {
		return nil, errf(proto.CodeBadRequest, "malformed JSON array: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errf(proto.CodeBadRequest, "trailing data after the JSON array")
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	return out, nil
}

// decodeScore reads one element with the decoder the WebSocket score
// shares (proto.DecodeScore: the same rules and messages), then the member
// id and the board's own rules. The id is echoed whenever it is a string,
// even an invalid one or in an otherwise bad element, so the client can
// tell which event this is.
func decodeScore(b rank.Board, raw json.RawMessage) scoreItem {
	s, err := proto.DecodeScore(raw)
	it := scoreItem{id: s.ID}
	if err == nil {
		err = rank.CheckMemberID(s.Member)
	}
	if err != nil {
		it.err = err
		return it
	}
	ev := rank.Event{Board: b.ID, ID: s.ID, Member: s.Member, Op: s.Op, Amount: s.Amount, Meta: s.Meta}
	if s.HasAt {
		ev.At = time.UnixMilli(s.At) // only server and admin tokens reach here
	}
	if err := ev.Check(b); err != nil {
		it.err = err
		return it
	}
	it.ev = ev
	return it
}
