package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/gwtest"
	"github.com/wsgateway/wsgateway/proto"
)

// TestSameFaultSameAnswer sends the same faulty score events to one gateway
// as WebSocket score frames (a server token) and as one REST scores array:
// each fault gets the same code, the same message and the same echoed id on
// both paths, and nothing is applied. Then one event sent over both is
// acknowledged with the same JSON (REST: no type; the repeat a duplicate).
func TestSameFaultSameAnswer(t *testing.T) {
	t.Parallel()
	secret := []byte("same-fault-tests-secret-0123456789abcdef")
	g, stop, err := gwtest.Start(gwtest.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	base := "http" + strings.TrimSuffix(strings.TrimPrefix(g.URL, "ws"), "/ws")
	mint := func(sub string, role auth.Role) string {
		tok, err := auth.MintHS256(secret, auth.Claims{Sub: sub, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	server, admin := mint("srv", auth.Server), mint("root", auth.Admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, body := post(ctx, t, "PUT", base+"/api/v1/boards/b", admin, `{"max_delta":1000}`); st != 200 {
		t.Fatalf("create board: %d %s", st, body)
	}

	faults := []struct {
		elem  string // a REST element; the frame adds type and board
		code  string
		store bool // refused by the store on the WebSocket path
	}{
		{`{"member":"m","delta":1}`, proto.CodeBadRequest, false},                                        // id missing
		{`{"id":"a b","member":"m","delta":1}`, proto.CodeBadRequest, false},                             // id invalid
		{`{"id":7,"member":"m","delta":1}`, proto.CodeBadRequest, false},                                 // id not a string
		{`{"id":"` + strings.Repeat("x", 65) + `","member":"m","delta":1}`, proto.CodeBadRequest, false}, // id too long
		{`{"id":"f1","member":7,"delta":1}`, proto.CodeBadRequest, false},                                // member not a string
		{`{"id":"f2","member":null,"delta":1}`, proto.CodeBadRequest, false},
		{`{"id":"f3","delta":1}`, proto.CodeBadRequest, false}, // member missing
		{`{"id":"f4","member":"a b","delta":1}`, proto.CodeInvalidMember, false},
		{`{"id":"f5","member":"m","delta":1,"value":1}`, proto.CodeBadRequest, false}, // both
		{`{"id":"f6","member":"m"}`, proto.CodeBadRequest, false},                     // neither
		{`{"id":"f7","member":"m","delta":1.5}`, proto.CodeInvalidScore, false},
		{`{"id":"f8","member":"m","delta":1e3}`, proto.CodeInvalidScore, false},
		{`{"id":"f9","member":"m","delta":"10"}`, proto.CodeInvalidScore, false},
		{`{"id":"f10","member":"m","delta":null}`, proto.CodeInvalidScore, false},
		{`{"id":"f11","member":"m","delta":9007199254740992}`, proto.CodeInvalidScore, false},
		{`{"id":"f12","member":"m","delta":-9007199254740992}`, proto.CodeInvalidScore, false},
		{`{"id":"f13","member":"m","value":1.0}`, proto.CodeInvalidScore, false},
		{`{"id":"f14","member":"m","delta":1,"extra":true}`, proto.CodeBadRequest, false}, // unknown field
		{`{"extra":true,"id":"f15","member":"m","delta":1}`, proto.CodeBadRequest, false},
		{`{"id":"f16","Member":"m","delta":1}`, proto.CodeBadRequest, false},           // names are case-sensitive
		{`{"id":"f17","member":"m","delta":1,"delta":2}`, proto.CodeBadRequest, false}, // duplicate field
		{`{"id":"f18","id":"f19","member":"m","delta":1}`, proto.CodeBadRequest, false},
		// The board's own rules (rank.Event.Check): on the WebSocket the
		// store checks them, so its message carries the store's context
		// ("memstore: apply b: …") before the same words.
		{`{"id":"f20","member":"m","value":5}`, proto.CodeBadRequest, true},       // value on an incr board
		{`{"id":"f21","member":"m","delta":1001}`, proto.CodeDeltaTooLarge, true}, // above max_delta
	}

	// REST: one array of every fault.
	elems := make([]string, len(faults))
	for i, f := range faults {
		elems[i] = f.elem
	}
	st, body := post(ctx, t, "POST", base+"/api/v1/boards/b/scores", server, "["+strings.Join(elems, ",")+"]")
	if st != 200 {
		t.Fatalf("POST scores: %d %s", st, body)
	}
	var rest []proto.ScoreFailure
	if err := json.Unmarshal(body, &rest); err != nil || len(rest) != len(faults) {
		t.Fatalf("answer %s: %v", body, err)
	}

	// WebSocket: each fault as a score frame, a good page request between
	// them so that the bad-request streak (R10) never closes the connection.
	ws := dialWS(ctx, t, g.URL, server)
	for i, f := range faults {
		frame := `{"type":"score","board":"b",` + strings.TrimPrefix(f.elem, "{")
		e := wsError(ctx, t, ws, frame)
		r := rest[i]
		if e.Code != f.code || r.Error.Code != f.code {
			t.Errorf("%s: WebSocket %s, REST %s; want %s", f.elem, e.Code, r.Error.Code, f.code)
		}
		if f.store && strings.HasSuffix(e.Message, ": "+r.Error.Message) {
			// the same words after the store's context
		} else if e.Message != r.Error.Message || e.Message == "" {
			t.Errorf("%s: messages differ:\n WebSocket %q\n REST      %q", f.elem, e.Message, r.Error.Message)
		}
		if e.ID != r.ID {
			t.Errorf("%s: WebSocket echoes id %q, REST %q", f.elem, e.ID, r.ID)
		}
		var page map[string]any
		wsRoundTrip(ctx, t, ws, `{"type":"page","id":"p","board":"b"}`, &page)
		if page["type"] != proto.TypePage || page["total"] != float64(0) {
			t.Fatalf("after %s: %v (nothing may be applied)", f.elem, page)
		}
	}

	// The same invalid board id, in the frame and in the path (one that
	// needs no escaping in a URL path).
	e := wsError(ctx, t, ws, `{"type":"score","id":"g1","board":"a:b","member":"m","delta":1}`)
	st, body = post(ctx, t, "POST", base+"/api/v1/boards/a:b/scores", server, `[{"id":"g1","member":"m","delta":1}]`)
	var eb proto.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || st != 400 {
		t.Fatalf("invalid board over REST: %d %s", st, body)
	}
	if e.Code != proto.CodeInvalidBoard || eb.Error != (proto.ErrorDetail{Code: e.Code, Message: e.Message}) {
		t.Errorf("invalid board: WebSocket %+v, REST %+v", e, eb.Error)
	}

	// One event over both paths: REST answers the repeat with the first
	// result, byte for byte the WebSocket ack without its type.
	frame := `{"type":"score","id":"same","board":"b","member":"m","delta":7}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	_, ack, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, body = post(ctx, t, "POST", base+"/api/v1/boards/b/scores", server, `[{"id":"same","member":"m","delta":7}]`)
	wantAck := `{"type":"ack","id":"same","board":"b","member":"m","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":`
	if !strings.HasPrefix(string(ack), wantAck) {
		t.Fatalf("WebSocket ack %s, want %s…", ack, wantAck)
	}
	wantREST := "[{" + strings.Replace(strings.TrimPrefix(string(ack), `{"type":"ack",`), `"duplicate":false`, `"duplicate":true`, 1) + "]"
	if st != 200 || string(body) != wantREST {
		t.Errorf("REST answer %d %s\nwant %s", st, body, wantREST)
	}
}

func post(ctx context.Context, t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, bytes.TrimSpace(b)
}

func dialWS(ctx context.Context, t *testing.T, url, token string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	var welcome proto.Welcome
	if _, b, err := ws.Read(ctx); err != nil || json.Unmarshal(b, &welcome) != nil || welcome.Type != proto.TypeWelcome {
		t.Fatalf("welcome: %s %v", b, err)
	}
	return ws
}

// wsRoundTrip writes one frame and decodes the next reply into v.
func wsRoundTrip(ctx context.Context, t *testing.T, ws *websocket.Conn, frame string, v any) {
	t.Helper()
	if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("write %s: %v", frame, err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("reply to %s: %v", frame, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("reply to %s: %s: %v", frame, b, err)
	}
}

// wsError sends a frame that must be refused and returns the error reply.
func wsError(ctx context.Context, t *testing.T, ws *websocket.Conn, frame string) proto.Error {
	t.Helper()
	var e proto.Error
	wsRoundTrip(ctx, t, ws, frame, &e)
	if e.Type != proto.TypeError {
		t.Fatalf("%s: got %+v, want an error", frame, e)
	}
	return e
}
