package client

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/wsgateway/wsgateway/proto"
)

// Options configure a Client. A nil *Options means every default.
type Options struct {
	// URLs are further gateway URLs. Dial tries its url, then these in turn;
	// a reconnect moves to the next URL after each failed attempt.
	URLs []string
	// Reconnect redials after a lost connection, forever, until Close.
	// False (the default): a lost connection closes the Client and fails
	// every pending call with ErrConnLost.
	Reconnect bool
	// MinBackoff and MaxBackoff bound the delay between reconnect attempts,
	// which doubles from MinBackoff up to MaxBackoff, each delay drawn
	// uniformly from its upper half (jitter, so that clients dropped together
	// do not return together). Defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Header is sent with every upgrade request (cloned, never modified).
	Header http.Header
	// TokenFunc, when set, supplies the token for every dial after the first
	// (the token given to Dial is used first): a refresh hook.
	TokenFunc func(ctx context.Context) (string, error)
	// SubprotocolToken carries the token as the subprotocol
	// "bearer.<jwt>" (the browser carrier) instead of an Authorization
	// header. The gateway never echoes it.
	SubprotocolToken bool
	// OnTop and OnView receive every live frame, on the read goroutine:
	// they must return quickly, since replies wait behind them.
	OnTop  func(proto.Top)
	OnView func(proto.View)
	// OnMembers receives every members frame, as OnTop (§11).
	OnMembers func(proto.Members)
	// OnBoard receives every board frame (R19), likewise.
	OnBoard func(proto.Board)
	// OnDraining is told when the gateway drains (§15): the connection is
	// closed soon and the Client reconnects after the given delay (with
	// Reconnect), on the read goroutine, likewise.
	OnDraining func(after time.Duration)
	// OnState is told every state change, from the client's own goroutine
	// (never concurrently with itself).
	OnState func(State)
	// OnError receives errors tied to no call: an error frame without id, a
	// failed renewal of a subscription, the reason a connection was lost.
	OnError func(error)
	// Logger receives connection events. Nil discards them. Tokens are
	// never logged.
	Logger *slog.Logger
	// HTTPClient dials the upgrade. Nil means a client of the Client's own
	// with http.DefaultTransport's settings, under which frames written
	// while the socket is busy go out together in one write (batch.go);
	// with an HTTPClient of your own, each frame is one socket write.
	HTTPClient *http.Client
	// TLSConfig is the TLS configuration for wss:// URLs of the Client's own
	// HTTP client (HTTPClient nil), e.g. RootCAs for a gateway whose
	// certificate a private CA signed; nil uses the system's roots. It is
	// cloned, and frames are batched under TLS as over plain TCP. Setting it
	// together with HTTPClient is an error: that client's transport carries
	// its own TLS configuration.
	TLSConfig *tls.Config
	// MaxPending bounds the calls in flight; a call beyond it waits (honouring
	// its context) for a slot. Default 1024.
	MaxPending int
	// WriteTimeout bounds one frame write; a write blocked that long drops
	// the connection (which a reconnect then replaces). Default 10s.
	WriteTimeout time.Duration
	// DialTimeout bounds one reconnect attempt, upgrade and welcome. Dial
	// itself is bounded by its context only. Default 10s.
	DialTimeout time.Duration
	// PingInterval is how often an idle connection is pinged to find a dead
	// peer; a ping unanswered within the interval drops the connection.
	// Default 30s; negative disables pings.
	PingInterval time.Duration
	// MaxFrame is the largest frame read from the gateway. Default 1 MiB.
	MaxFrame int64
	// IDPrefix prefixes request ids ("<prefix>-<counter>"). Default: 8 random
	// characters, so that ids of different clients never collide on a board.
	IDPrefix string
}

// State is a Client's connection state.
type State int

// States, in the order a Client moves through them.
const (
	StateConnecting State = iota
	StateConnected
	StateReconnecting
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateReconnecting:
		return "reconnecting"
	case StateClosed:
		return "closed"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

var (
	// ErrClosed is returned by calls on a Client that was closed.
	ErrClosed = errors.New("client: closed")
	// ErrConnLost fails a call whose connection died before its reply when it
	// cannot be retried (auth, or any call when Options.Reconnect is off).
	ErrConnLost = errors.New("client: connection lost")
)

// Error is an error answered by the gateway: an error frame, or a refused
// upgrade (then Status is its HTTP status).
type Error struct {
	Code       string // a contract code: proto.CodeRateLimited, …
	Message    string
	RetryAfter time.Duration // when retrying later helps (rate_limited, unavailable)
	Status     int           // HTTP status of a refused upgrade; 0 for an error frame
	// Reason says why: a board_closed's (R30), or a rejected event's, the
	// board's validation hook's words (§16).
	Reason string
}

func (e *Error) Error() string {
	s := "client: " + e.Code + ": " + e.Message
	if e.RetryAfter > 0 {
		s += " (retry after " + e.RetryAfter.String() + ")"
	}
	return s
}

// Client is one connection to a gateway (renewed on loss when
// Options.Reconnect is set). All methods may be called concurrently.
type Client struct {
	opts   Options
	urls   []string
	log    *slog.Logger
	prefix string
	ids    atomic.Uint64
	slots  chan struct{} // one per call in flight (Options.MaxPending)
	calls  sync.Pool     // *call, recycled by Score (newCall)
	// batched: every connection is a batchConn (our own HTTP client), so a
	// write only queues; bg is c.ctx without its end, for such writes
	// and for the reader.
	batched bool
	bg      context.Context

	ctx    context.Context // the Client's lifetime; Close cancels it
	cancel context.CancelFunc
	done   chan struct{} // closed when the run goroutine has finished

	// stateMu serialises OnState calls and guards state.
	stateMu sync.Mutex
	state   State

	// mu guards the fields below. It is never held across a network write
	// or a user callback.
	mu      sync.Mutex
	conn    *websocket.Conn // nil while disconnected
	gen     uint64          // counts connections; a call records the one it was last sent on
	seq     uint64          // registration order of calls, for re-sending in order
	pending map[string]*call
	subs    map[string]*Subscription
	token   string
	welcome proto.Welcome
	closed  bool
	// drainAt is when the gateway said to reconnect (§15); zero: no hint.
	drainAt time.Time
}

// Dial connects to url (then, on failure, to each of opts.URLs in turn) with
// token, and waits for the gateway's welcome. It returns the first error when
// no URL accepts; a refused upgrade is an *Error with its HTTP status.
// ctx bounds the dial only.
func Dial(ctx context.Context, url, token string, opts *Options) (*Client, error) {
	c, err := newClient(url, token, opts)
	if err != nil {
		return nil, err
	}
	var first error
	for i, u := range c.urls {
		conn, w, err := c.dial(ctx, u, token)
		if err != nil {
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		c.welcome = w
		c.conn = conn
		c.gen = 1
		c.setState(StateConnected)
		go c.run(conn, (i+1)%len(c.urls))
		return c, nil
	}
	c.cancel()
	return nil, first
}

func newClient(url, token string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if url == "" {
		return nil, errors.New("client: dial: empty url")
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.MaxPending <= 0 {
		o.MaxPending = 1024
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.PingInterval == 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = 1 << 20
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prefix := o.IDPrefix
	if prefix == "" {
		prefix = rand.Text()[:8]
	}
	batched := o.HTTPClient == nil
	if batched {
		o.HTTPClient = batchingClient(o.WriteTimeout, o.TLSConfig)
	} else if o.TLSConfig != nil {
		return nil, errors.New("client: dial: TLSConfig applies to the Client's own HTTP client; set TLS on HTTPClient's transport instead")
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		batched: batched,
		bg:      context.WithoutCancel(ctx),
		opts:    o,
		urls:    append([]string{url}, o.URLs...),
		log:     log,
		prefix:  prefix,
		slots:   make(chan struct{}, o.MaxPending),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		pending: make(map[string]*call),
		subs:    make(map[string]*Subscription),
		token:   token,
	}, nil
}

// dial opens one connection and reads its welcome.
func (c *Client) dial(ctx context.Context, url, token string) (*websocket.Conn, proto.Welcome, error) {
	var w proto.Welcome
	h := c.opts.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	protos := []string{proto.Subprotocol}
	if c.opts.SubprotocolToken {
		protos = append(protos, proto.BearerPrefix+token)
	} else if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient:      c.opts.HTTPClient,
		HTTPHeader:      h,
		Subprotocols:    protos,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if e := refused(resp); e != nil {
			return nil, w, fmt.Errorf("client: dial %s: %w", url, e)
		}
		return nil, w, fmt.Errorf("client: dial %s: %w", url, err)
	}
	conn.SetReadLimit(c.opts.MaxFrame)
	_, data, err := conn.Read(ctx)
	if cerr := ctx.Err(); cerr != nil {
		// The library closes the connection from ctx's AfterFunc when ctx
		// ends during a read; ending just as the welcome arrived leaves a
		// read that succeeded on a connection being closed, or one that
		// failed on the closed socket. Either way the dial was cancelled.
		err = cerr
	}
	if err != nil {
		conn.CloseNow()
		return nil, w, fmt.Errorf("client: dial %s: welcome: %w", url, err)
	}
	var f frame
	if err := f.decode(data); err != nil {
		conn.CloseNow()
		return nil, w, fmt.Errorf("client: dial %s: welcome: %w", url, err)
	}
	switch f.Type {
	case proto.TypeWelcome:
		return conn, f.welcome(), nil
	case proto.TypeError:
		conn.CloseNow()
		return nil, w, fmt.Errorf("client: dial %s: %w", url, f.err())
	}
	conn.CloseNow()
	return nil, w, fmt.Errorf("client: dial %s: first frame is %q, not welcome", url, f.Type)
}

// refused reads the JSON error of a refused upgrade (401, 403, …).
func refused(resp *http.Response) *Error {
	if resp == nil || resp.StatusCode < 400 {
		return nil
	}
	e := &Error{Status: resp.StatusCode, Code: proto.CodeUnauthorized, Message: resp.Status}
	if resp.StatusCode == http.StatusForbidden {
		e.Code = proto.CodeForbidden
	}
	if resp.Body != nil {
		// coder/websocket keeps at most the first 1024 bytes of the body.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var body proto.ErrorBody
		if jsonUnmarshal(b, &body) == nil && body.Error.Code != "" {
			e.Code, e.Message = body.Error.Code, body.Error.Message
		}
	}
	return e
}

// Welcome is the welcome frame of the current (or last) connection.
func (c *Client) Welcome() proto.Welcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.welcome
}

// State is the current connection state.
func (c *Client) State() State {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.state
}

// setState records s and tells OnState. Only Dial (before the run goroutine
// starts) and the run goroutine call it, so OnState is never concurrent.
func (c *Client) setState(s State) {
	c.stateMu.Lock()
	same := c.state == s
	c.state = s
	c.stateMu.Unlock()
	if !same && c.opts.OnState != nil {
		c.opts.OnState(s)
	}
}

// Close closes the connection with 1000, stops reconnecting and fails every
// pending call with ErrClosed. It is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	conn := c.conn
	c.mu.Unlock()
	if !already && conn != nil {
		// The read goroutine is running, so the close handshake completes.
		conn.Close(websocket.StatusNormalClosure, "")
	}
	c.cancel()
	<-c.done
	return nil
}

// nextID is "<prefix>-<counter>", built in one allocation.
func (c *Client) nextID() string {
	var buf [64]byte
	b := append(append(buf[:0], c.prefix...), '-')
	return string(strconv.AppendUint(b, c.ids.Add(1), 36))
}

func (c *Client) onError(err error) {
	c.log.Warn("client", "err", err)
	if c.opts.OnError != nil {
		c.opts.OnError(err)
	}
}
