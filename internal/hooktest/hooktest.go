// Package hooktest is a validation hook for tests (docs/integrity.md): an
// HTTP server on a loopback port that checks every call's signature and
// headers, records the calls and answers as the test says.
package hooktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/webhook"
)

// Call is one call the hook got.
type Call struct {
	Delivery string
	Body     map[string]any
	Raw      []byte
	At       time.Time
}

// Answer is what the hook does with a call: wait Delay and until Until is
// closed (either cut short when the test ends), then answer Status (0 =
// 200) with Body (marshalled when not a string or []byte; nil = accept).
type Answer struct {
	Status int
	Body   any
	Delay  time.Duration
	Until  <-chan struct{}
}

// Accept, Reject and Flag are the three verdicts.
func Accept() Answer { return Answer{Body: map[string]string{"verdict": "accept"}} }
func Reject(reason string) Answer {
	return Answer{Body: map[string]string{"verdict": "reject", "reason": reason}}
}
func Flag(reason string) Answer {
	return Answer{Body: map[string]string{"verdict": "flag", "reason": reason}}
}

// Hook is a running test hook.
type Hook struct {
	URL    string
	Secret string
	t      testing.TB
	srv    *httptest.Server
	stop   chan struct{}

	mu     sync.Mutex
	answer func(Call) Answer
	calls  []Call
	bad    []string // calls whose signature or headers were wrong
}

// New starts a hook that signs with secret and answers with answer (nil =
// Accept for every call).
func New(t testing.TB, secret string, answer func(Call) Answer) *Hook {
	h := &Hook{Secret: secret, t: t, stop: make(chan struct{}), answer: answer}
	if h.answer == nil {
		h.answer = func(Call) Answer { return Accept() }
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	h.URL = h.srv.URL + "/validate"
	t.Cleanup(func() {
		close(h.stop)
		h.srv.CloseClientConnections()
		h.srv.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.bad) > 0 {
			t.Errorf("hooktest: bad calls: %v", h.bad)
		}
	})
	return h
}

// SetAnswer replaces the answer for later calls.
func (h *Hook) SetAnswer(answer func(Call) Answer) {
	h.mu.Lock()
	h.answer = answer
	h.mu.Unlock()
}

// Calls is every call so far, in arrival order.
func (h *Hook) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call(nil), h.calls...)
}

// CallsOf counts the calls for one event id.
func (h *Hook) CallsOf(id string) int {
	n := 0
	for _, c := range h.Calls() {
		if c.Body["id"] == id {
			n++
		}
	}
	return n
}

func (h *Hook) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := Call{Delivery: r.Header.Get("X-LB-Delivery"), Raw: raw, At: time.Now()}
	var problems []string
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		problems = append(problems, fmt.Sprintf("%s with Content-Type %q", r.Method, r.Header.Get("Content-Type")))
	}
	if ev := r.Header.Get("X-LB-Event"); ev != "score.validate" {
		problems = append(problems, "X-LB-Event "+ev)
	}
	ts := r.Header.Get("X-LB-Timestamp")
	if sec, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
		problems = append(problems, "X-LB-Timestamp "+ts)
	}
	if !webhook.Verify(h.Secret, ts, raw, r.Header.Get("X-LB-Signature")) {
		problems = append(problems, "signature "+r.Header.Get("X-LB-Signature"))
	}
	if c.Delivery == "" {
		problems = append(problems, "no X-LB-Delivery")
	}
	if err := json.Unmarshal(raw, &c.Body); err != nil {
		problems = append(problems, "body "+string(raw))
	}
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.bad = append(h.bad, problems...)
	answer := h.answer
	h.mu.Unlock()
	a := answer(c)
	if a.Until != nil {
		select {
		case <-a.Until:
		case <-h.stop:
		case <-r.Context().Done():
		}
	}
	if a.Body == nil {
		a.Body = Accept().Body
	}
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		select {
		case <-t.C:
		case <-h.stop:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	var body []byte
	switch b := a.Body.(type) {
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		body, _ = json.Marshal(b)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(max(a.Status, 200))
	_, _ = w.Write(body)
}
