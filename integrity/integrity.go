// Package integrity runs boards' validation hooks (docs/protocol.md §16,
// R35, R36; docs/integrity.md). It wraps the node's rank store: the store's
// apply step claims each event a board's hook must see (rank.ValidateError)
// instead of applying it, and this wrapper then calls the hook, signed as
// webhooks are, on a goroutine of the call's own, and applies the event
// with the verdict, records the reject, or follows the board's on_error.
// The event's submitter waits for its done as for any apply (a WebSocket
// connection in its own window), so a slow or dead hook holds no store
// lane, no other board and no other connection.
//
// Calls in flight are bounded per node and per board; past either bound an
// event is answered unavailable at once, with the retry its claim needs
// to lapse. It also tells webhooks of the members its node held
// (member.held, held.go).
package integrity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/webhook"
)

// Defaults of Config.
const (
	DefaultMaxCalls      = 256
	DefaultMaxBoardCalls = 64
	DefaultStoreTimeout  = 5 * time.Second
)

// Config tunes the hook calls; its zero value is usable.
type Config struct {
	// AllowPrivate lets hooks reach loopback, private and link-local
	// addresses (--webhook-allow-private), as webhooks may.
	AllowPrivate bool
	// Transport replaces the HTTP transport (tests); nil = one that dials
	// through webhook's guard of targets unless AllowPrivate.
	Transport http.RoundTripper
	// MaxCalls bounds the hook calls in flight on the node, MaxBoardCalls
	// those of one board; zero = DefaultMaxCalls, DefaultMaxBoardCalls.
	// An event past either is answered unavailable (its claim lapses).
	MaxCalls, MaxBoardCalls int
	// StoreTimeout bounds recording a verdict in the store; zero =
	// DefaultStoreTimeout.
	StoreTimeout time.Duration
	// Now is the clock of X-LB-Timestamp; nil = time.Now.
	Now func() time.Time
	// Registry receives the metrics; nil = none registered.
	Registry prometheus.Registerer
	// Logger receives failed calls; nil = discard.
	Logger *slog.Logger
}

// Store is a rank.Store whose Apply runs boards' hooks. Safe for
// concurrent use.
type Store struct {
	rank.Store
	cfg    Config
	log    *slog.Logger
	client *http.Client
	m      *metrics
	slots  chan struct{} // one per call in flight on the node

	mu     sync.Mutex     // guards boards
	boards map[string]int // calls in flight per board

	held chan heldEvent // held.go
}

// Wrap returns s with its boards' hooks run on Apply.
func Wrap(s rank.Store, cfg Config) (*Store, error) {
	if cfg.MaxCalls < 0 || cfg.MaxBoardCalls < 0 {
		return nil, errors.New("integrity: MaxCalls and MaxBoardCalls must not be negative")
	}
	if cfg.MaxCalls == 0 {
		cfg.MaxCalls = DefaultMaxCalls
	}
	if cfg.MaxBoardCalls == 0 {
		cfg.MaxBoardCalls = DefaultMaxBoardCalls
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	tr := cfg.Transport
	if tr == nil {
		d := webhook.Dialer(rank.MaxValidateTimeout)
		if cfg.AllowPrivate {
			d.Control = nil
		}
		tr = &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConnsPerHost: cfg.MaxBoardCalls,
			IdleConnTimeout:     time.Minute,
			// A proxy would dial the target for us, past Control.
			Proxy: nil,
		}
	}
	return &Store{
		Store: s, cfg: cfg, log: cfg.Logger, m: m,
		client: &http.Client{
			Transport: tr,
			// A redirect is the hook's answer, not a new target: a
			// failed call.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		slots:  make(chan struct{}, cfg.MaxCalls),
		boards: map[string]int{},
		held:   make(chan heldEvent, heldQueue),
	}, nil
}

// Apply applies e; an event the store claims for its board's hook is
// answered once the hook has been called and its verdict recorded. done
// may then run on the call's goroutine.
func (s *Store) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	if b, ok := s.Store.CachedBoard(e.Board); ok && !b.Validated() {
		s.Store.Apply(ctx, e, done) // no claim can come back: no wrapper
		return
	}
	s.Store.Apply(ctx, e, func(r rank.Result, err error) {
		var ve *rank.ValidateError
		if !errors.As(err, &ve) {
			done(r, err)
			return
		}
		s.start(ctx, e, ve, done)
	})
}

// start runs the hook call for the claim ve on a goroutine, or answers
// unavailable when the node or the board has too many in flight. It does
// not block: it runs inside the store's done.
func (s *Store) start(ctx context.Context, e rank.Event, ve *rank.ValidateError, done rank.Done) {
	claimed := time.Now()
	if !s.acquire(e.Board) {
		s.m.verdicts.WithLabelValues("busy").Inc()
		done(rank.Result{}, fmt.Errorf("integrity: %s: too many validation calls in flight: %w", e.Board, &rank.PendingError{Retry: s.claimLeft(e.Board, claimed)}))
		return
	}
	go func() {
		defer s.release(e.Board)
		s.validate(ctx, e, ve, claimed, done)
	}()
}

func (s *Store) acquire(board string) bool {
	select {
	case s.slots <- struct{}{}:
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.boards[board] >= s.cfg.MaxBoardCalls {
		<-s.slots
		return false
	}
	s.boards[board]++
	s.m.inFlight.Inc()
	return true
}

func (s *Store) release(board string) {
	s.mu.Lock()
	if s.boards[board]--; s.boards[board] <= 0 {
		delete(s.boards, board)
	}
	s.mu.Unlock()
	<-s.slots
	s.m.inFlight.Dec()
}

// claimLeft is how long the claim made at claimed has left on board: the
// retry an unavailable answer carries.
func (s *Store) claimLeft(board string, claimed time.Time) time.Duration {
	d := rank.DefaultValidateTimeout + rank.ClaimMargin
	if b, ok := s.Store.CachedBoard(board); ok {
		d = b.ClaimFor()
	}
	return max(d-time.Since(claimed), time.Millisecond)
}

// validate calls e's board's hook under the claim ve and answers done with
// the outcome, recording it in the store first (R35).
func (s *Store) validate(ctx context.Context, e rank.Event, ve *rank.ValidateError, claimed time.Time, done rank.Done) {
	if ctx.Err() != nil {
		done(rank.Result{}, fmt.Errorf("integrity: %s: %w", e.Board, ctx.Err())) // nobody waits: the claim lapses
		return
	}
	b, err := s.Store.Board(ctx, e.Board)
	if err != nil {
		done(rank.Result{}, fmt.Errorf("integrity: %s: %w", e.Board, err))
		return
	}
	v, reason, err := s.call(ctx, b, e, ve)
	// The answer is recorded whatever became of the caller: a re-send must
	// find it rather than call again.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StoreTimeout)
	if err != nil {
		s.log.Warn("integrity: validation failed", "board", b.ID, "member", e.Member, "id", e.ID, "on_error", b.Hook.OnError, "err", err)
		if b.Hook.OnError != rank.OnErrorAccept {
			cancel()
			done(rank.Result{}, fmt.Errorf("integrity: %s: %w: %w", b.ID, err, &rank.PendingError{Retry: s.claimLeft(b.ID, claimed)}))
			return
		}
		v = verdictAccept
	}
	if v == verdictReject {
		ok, err := s.Store.Reject(sctx, e, ve.Token, reason)
		cancel()
		switch {
		case err != nil:
			done(rank.Result{}, fmt.Errorf("integrity: record reject of %s: %w", e.ID, err))
		case !ok: // the claim lapsed meanwhile: the record says what stands
			done(rank.Result{}, fmt.Errorf("integrity: %s: %w", b.ID, &rank.PendingError{Retry: time.Millisecond}))
		default:
			done(rank.Result{}, &rank.RejectedError{Reason: reason})
		}
		return
	}
	e.Verdict, e.Claim, e.Reason = rank.VerdictAccept, ve.Token, ""
	if v == verdictFlag {
		e.Verdict, e.Reason = rank.VerdictFlag, reason
	}
	// The store may answer after Apply returns: its context lives until then.
	s.Store.Apply(sctx, e, func(r rank.Result, err error) {
		cancel()
		done(r, err)
	})
}
